"""The Django project: settings, urls, ASGI/WSGI, Celery app, CLI, REST API root and tokens.
May import everything; no app imports it (docs/LAYERS.md): it wires the apps together.

Every process of the product (manage.py, the ASGI/WSGI server, Celery workers, the tests)
imports this package before any app, so what must hold before a library loads is set here:
ONNX Runtime (the embedding models' runtime, also loaded by `import pymupdf`) has sent usage
telemetry to Microsoft from Linux since 1.29, writing a device id under ~/.cache/Microsoft
and a session file in the temp folder; `ORT_DISABLE_TELEMETRY=1` before its first import
turns all of it off. A local research library sends nothing about its use anywhere.

numpy's OpenBLAS runs one thread per process (`OPENBLAS_NUM_THREADS=1`, read when numpy
loads): a search's dot products over the vector matrix are small and come from many
requests and background writers at once, and OpenBLAS's own threads, waiting on cores
those already hold, made a 5k x 384 product take ~16 ms instead of ~0.2 ms on a busy
2-core machine (docs/SEARCH.md, "Vector index"). Both are defaults a user may override
in the environment.
"""

import os

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from research_site.celery import app as celery_app  # after the variable above

__all__ = ("celery_app",)
