"""Paper assets: summaries by template, the source markdown and translations by language.

A `PaperAsset` row says that an asset exists and where it is stored; the content lives in
the knowledge base or behind the internal `ASSET_BASE_URL`, with the same relative layout:

    <paper_id>/summary/<template>.json
    <paper_id>/source.md
    <paper_id>/translation/<lang>.md

Locations never leave this package: errors carry the paper, the asset and a reason, never a
path or a URL, because clients (LLM agents) must not learn internal addresses.

Names from clients are validated before anything is built from them: template names are
lower-cased identifiers, language codes BCP-47-like and put in canonical case (`pt-BR`,
`zh-Hans`). Only validated names reach a path or URL, so `../`, absolute paths and encoded
separators cannot.

Modules: `names` (validation, layout), `storage` (files), `remote` (ASSET_BASE_URL),
`selectors` (reads), `services` (writes), `truncation`, `errors`.
"""

from papers.assets.errors import (
    AssetFetchFailed,
    AssetNotFound,
    AssetParseFailed,
    Kind,
    TemplateNotAvailable,
)
from papers.assets.names import (
    LANGUAGE_PATTERN,
    TEMPLATE_PATTERN,
    asset_relative_path,
    language_code_clean,
    template_name_clean,
)
from papers.assets.remote import MAX_REDIRECTS
from papers.assets.selectors import (
    AssetContent,
    available_summary_templates,
    available_translations,
    source_get,
    summary_get,
    summary_templates_info,
    translation_get,
)
from papers.assets.services import asset_register_remote, asset_save, paper_preferred_template_set
from papers.assets.truncation import truncate

__all__ = [
    "LANGUAGE_PATTERN",
    "MAX_REDIRECTS",
    "TEMPLATE_PATTERN",
    "AssetContent",
    "AssetFetchFailed",
    "AssetNotFound",
    "AssetParseFailed",
    "Kind",
    "TemplateNotAvailable",
    "asset_register_remote",
    "asset_relative_path",
    "asset_save",
    "available_summary_templates",
    "available_translations",
    "language_code_clean",
    "paper_preferred_template_set",
    "source_get",
    "summary_get",
    "summary_templates_info",
    "template_name_clean",
    "translation_get",
    "truncate",
]
