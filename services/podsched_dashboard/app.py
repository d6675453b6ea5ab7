"""The dashboard's web server (Starlette): the page, its JSON views, the what-if, the change stream.

Routes (all reads answer from the mirror, except object pages and quotas, which ask the API):
  GET  /                          the page (templates/index.html, static/dashboard.js)
  GET  /api/summary               cluster totals and counts
  GET  /api/nodes?q=&filter=&page= a page of node cards
  GET  /api/queue?q=&page=        a page of the pending pods, and counts by priority
  GET  /api/preemptions?q=        the newest preemptions
  GET  /api/policies              PriorityClasses, PDBs, quotas
  GET  /api/pods/NS/NAME          what `podsched describe pod` shows, and the pod's events
  GET  /api/nodes/NAME            what `podsched describe node` shows
  POST /api/whatif                a pod manifest: the --dry-run=server answer, drawn on its node
  GET  /api/stream                server-sent events: which views changed (never their contents)
  GET  /trace/NS/NAME?since=T     redirect to the preemption's trace in Jaeger
  GET  /healthz                   200 once the Watch has delivered the cluster
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from podsched.api.documents import load_documents
from podsched.api.errors import ApiError
from podsched_cli.kubeconfig import Connection
from podsched_cli.output import describe_node, describe_pod
from podsched_cli.resources import client_side_error

from . import traces, views
from .api_client import ApiClient, ApiFailure
from .config import DashboardConfig
from .mirror import VIEWS, ClusterMirror

log = logging.getLogger(__name__)
HERE = Path(__file__).resolve().parent
WHATIF_SOURCE = "what-if"  # how kubectl's error lines name the pasted manifest
# The browser is told about changes at most this often.
STREAM_INTERVAL_SECONDS = 0.5
MAX_WHATIF_BYTES = 1 << 20


class Dashboard:
    """The server's state: configuration, the API client, the mirror and its followers."""

    def __init__(self, config: DashboardConfig, connection: Connection) -> None:
        self.config = config
        self.connection = connection
        self._client: ApiClient | None = None
        self.mirror = ClusterMirror(config.timeline_length)
        # Why the dashboard cannot follow the API right now (kubectl's line), or "".
        self.problem = ""
        self._follower: asyncio.Task[None] | None = None

    def _on_change(self) -> None:
        self.problem = ""

    def _on_failure(self, line: str) -> None:
        self.problem = line

    @property
    def client(self) -> ApiClient:
        assert self._client is not None, "the dashboard has not started"
        return self._client

    async def start(self) -> None:
        # The channel belongs to the server's event loop: made here, not before uvicorn starts it.
        self._client = ApiClient(self.connection, self.config.request_timeout_seconds)
        self._follower = asyncio.create_task(self._follow())

    async def _follow(self) -> None:
        try:
            await self.client.follow(self.mirror, self._on_change, self._on_failure)
        except asyncio.CancelledError:
            raise
        except Exception:
            # Crash, never go on silently: a dead follower would leave the page frozen on an old cluster,
            # and a restarted dashboard relists (it keeps nothing).
            log.exception("following the API failed; the dashboard exits")
            os._exit(1)

    async def stop(self) -> None:
        if self._follower is not None:
            self._follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._follower
        if self._client is not None:
            await self._client.close()


def _int(request: Request, name: str, default: int) -> int:
    try:
        return int(request.query_params.get(name, default))
    except ValueError:
        return default


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def build_app(dashboard: Dashboard) -> Starlette:
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    mirror = dashboard.mirror
    config = dashboard.config

    async def index(request: Request) -> Response:
        return templates.TemplateResponse(
            request, "index.html", {"server": dashboard.connection.address, "jaeger": bool(config.jaeger_url)}
        )

    async def healthz(_: Request) -> Response:
        if mirror.synced and not dashboard.problem:
            return PlainTextResponse("ok")
        return PlainTextResponse(dashboard.problem or "syncing", status_code=503)

    async def summary(_: Request) -> Response:
        body = views.cluster_totals(mirror)
        body["server"] = dashboard.client.address  # the replica in use
        body["problem"] = dashboard.problem
        body["versions"] = mirror.view_versions
        return JSONResponse(body)

    async def nodes(request: Request) -> Response:
        return JSONResponse(
            views.nodes_page(
                mirror,
                query=request.query_params.get("q", "").strip(),
                which=request.query_params.get("filter", "all"),
                page=_int(request, "page", 1),
                page_size=config.page_size,
            )
        )

    async def queue(request: Request) -> Response:
        return JSONResponse(
            views.queue_page(
                mirror,
                time.time(),
                query=request.query_params.get("q", "").strip(),
                page=_int(request, "page", 1),
                page_size=config.page_size,
            )
        )

    async def preemptions(request: Request) -> Response:
        return JSONResponse(
            views.timeline(mirror, time.time(), query=request.query_params.get("q", "").strip(), limit=50)
        )

    async def policies(_: Request) -> Response:
        try:
            quotas = await dashboard.client.get("resourcequotas")
        except ApiFailure as failure:
            return _error(str(failure), 502)
        return JSONResponse(views.policies(mirror, quotas))

    async def pod_page(request: Request) -> Response:
        namespace, name = request.path_params["namespace"], request.path_params["name"]
        try:
            found = await dashboard.client.get("pods", name, namespace)
            events = await dashboard.client.events_of(str(found[0]["metadata"].get("uid", "")))
        except ApiFailure as failure:
            return _error(str(failure), 404 if "NotFound" in str(failure) else 502)
        pod = found[0]
        return JSONResponse({"kind": "Pod", "describe": describe_pod(pod, events, time.time()), "events": events})

    async def node_page(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            found = await dashboard.client.get("nodes", name)
            events = await dashboard.client.events_of(str(found[0]["metadata"].get("uid", "")))
        except ApiFailure as failure:
            return _error(str(failure), 404 if "NotFound" in str(failure) else 502)
        pods = [p.obj for p in mirror.pods_on(name)]
        return JSONResponse(
            {"kind": "Node", "describe": describe_node(found[0], pods, events, time.time()), "events": events}
        )

    async def whatif(request: Request) -> Response:
        raw = await request.body()
        if len(raw) > MAX_WHATIF_BYTES:
            return _error(f"error: the what-if manifest is {len(raw)} bytes; at most {MAX_WHATIF_BYTES}", 413)
        text = raw.decode("utf-8", errors="replace")
        try:
            documents = load_documents(text, WHATIF_SOURCE)
        except ApiError as error:
            return _error(error.as_client_side(WHATIF_SOURCE).kubectl_message(), 422)
        if not documents:
            return _error("error: no objects passed to apply", 422)
        results = []
        for document in documents:
            problem = client_side_error(document, WHATIF_SOURCE)
            if problem is not None:
                return _error(problem, 422)
            if document.get("kind") != "Pod":
                name = (document.get("metadata") or {}).get("name", "")
                return _error(f"error: the what-if takes Pods; {document.get('kind')} {name!r} is not one", 422)
            try:
                response = await dashboard.client.dry_run(document, WHATIF_SOURCE)
            except ApiFailure as failure:
                return _error(str(failure), 422)
            outcome = response.dry_run
            predicted = {
                "nodeName": outcome.node_name,
                "nominatedNodeName": outcome.nominated_node_name,
                "victims": [{"namespace": v.namespace, "name": v.name} for v in outcome.victims],
                "message": outcome.message,
            }
            results.append(views.whatif_view(mirror, json.loads(response.object_json), predicted))
        return JSONResponse({"results": results})

    async def stream(request: Request) -> Response:
        async def changes() -> AsyncIterator[dict[str, str]]:
            seen = dict(mirror.view_versions)
            problem = dashboard.problem
            yield {"event": "changed", "data": json.dumps({"views": list(VIEWS), "version": mirror.version})}
            while True:
                # Polled, not pushed: each stream compares versions twice a second, so a burst of a
                # thousand binds is one message, and a slow browser never makes the follower wait.
                await asyncio.sleep(STREAM_INTERVAL_SECONDS)
                moved = [view for view, version in mirror.view_versions.items() if version != seen.get(view)]
                if dashboard.problem != problem:  # the header says whether the API can be followed
                    problem = dashboard.problem
                    moved.append("status")
                if moved:
                    seen = dict(mirror.view_versions)
                    yield {"event": "changed", "data": json.dumps({"views": moved, "version": mirror.version})}

        return EventSourceResponse(changes(), ping=15)

    async def trace(request: Request) -> Response:
        namespace, name = request.path_params["namespace"], request.path_params["name"]
        if not config.jaeger_url:
            return PlainTextResponse("no Jaeger configured (PODSCHED_JAEGER_URL)", status_code=404)
        since = float(_int(request, "since", int(time.time()) - 3600))
        try:
            trace_id = await asyncio.to_thread(traces.find_preemption_trace, config.jaeger_url, namespace, name, since)
        except (OSError, ValueError) as error:
            return PlainTextResponse(f"Jaeger at {config.jaeger_url} did not answer: {error}", status_code=502)
        if trace_id is None:
            return PlainTextResponse(
                f"no trace of the preemption by pod {namespace}/{name} in Jaeger at {config.jaeger_url} (yet)",
                status_code=404,
            )
        return RedirectResponse(traces.trace_url(config.jaeger_ui_url or config.jaeger_url, trace_id), 307)

    routes = [
        Route("/", index),
        Route("/healthz", healthz),
        Route("/api/summary", summary),
        Route("/api/nodes", nodes),
        Route("/api/nodes/{name}", node_page),
        Route("/api/queue", queue),
        Route("/api/preemptions", preemptions),
        Route("/api/policies", policies),
        Route("/api/pods/{namespace}/{name}", pod_page),
        Route("/api/whatif", whatif, methods=["POST"]),
        Route("/api/stream", stream),
        Route("/trace/{namespace}/{name}", trace),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await dashboard.start()
        try:
            yield
        finally:
            await dashboard.stop()

    return Starlette(routes=routes, lifespan=lifespan)
