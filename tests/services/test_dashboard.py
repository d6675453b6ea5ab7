"""The dashboard in a real browser (Debian's chromium, driven by playwright) against the live stack: the
session's Kafka and Jaeger, the four services on topics of their own, the dashboard process in front of
them, and the `podsched` CLI changing the cluster as a user would.

One stack serves the module's tests, in order: the page loads and follows the cluster; a what-if is
answered and drawn; bad what-if input gets kubectl's error; the High/Mid/Low preemption appears in
the timeline and on the nodes; its trace link resolves in Jaeger. The page is never reloaded after
it loads (a marker set in the page must survive), so every change seen came through the stream.
Screenshots go to the module's output folder."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import new_settings
from playwright.sync_api import Browser, Page, expect, sync_playwright
from real_browser import chromium_or_fail

from podsched_devstack import jaeger as jaeger_api
from podsched_devstack.dashboard import DashboardProcess
from podsched_devstack.jaeger import Jaeger
from podsched_devstack.kafka import DevstackError, KafkaBroker
from podsched_devstack.process import free_ports
from podsched_devstack.services import ServiceStack
from stacks import running

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "high-mid-low"
WAIT_MS = 30_000  # a change reaches the page within a second; generous for a busy 2-core machine
NO_RELOAD_MARKER = "window.__loadedOnce"


@dataclass
class Live:
    stack: ServiceStack
    dashboard: DashboardProcess
    jaeger: Jaeger
    output: Path

    def podsched(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """The CLI, as a user runs it."""
        return subprocess.run(
            [sys.executable, "-m", "podsched_cli.main", "--server", self.stack.server, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def pods(self) -> list[dict[str, Any]]:
        result = self.podsched("get", "pods", "-A", "-o", "json")
        assert result.returncode == 0, result.stderr
        return list(json.loads(result.stdout)["items"])


@pytest.fixture(scope="module")
def live(kafka: KafkaBroker, jaeger: Jaeger, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    output = tmp_path_factory.mktemp("dashboard")
    started = running(new_settings(kafka, output / "services", workers=2, otlp_endpoint=jaeger.otlp_endpoint))
    stack = next(started)
    dashboard = DashboardProcess(
        output / "services",
        stack.server,
        listen_address=f"127.0.0.1:{free_ports(1)[0]}",
        jaeger_url=jaeger.query_url,
    )
    try:
        dashboard.start()
    except DevstackError as error:
        started.close()
        pytest.fail(str(error), pytrace=False)
    try:
        yield Live(stack, dashboard, jaeger, output)
    finally:
        dashboard.stop()
        started.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium_or_fail()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(executable))
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def page(browser: Browser, live: Live) -> Iterator[Page]:
    """One tab for the whole module, loaded once."""
    opened = browser.new_page(viewport={"width": 1280, "height": 900})
    opened.goto(live.dashboard.url + "/#nodes")
    opened.evaluate(f"{NO_RELOAD_MARKER} = true")
    yield opened
    opened.close()


def example_applied(live: Live) -> None:
    """The example's classes, nodes and workload, all bound (a test run alone applies them itself;
    after the first test, applying again changes nothing)."""
    for manifest in ("cluster.yaml", "workload.yaml"):
        result = live.podsched("apply", "-f", str(EXAMPLE / manifest))
        assert result.returncode == 0, result.stderr
    live.dashboard.wait_until(
        lambda: sum(1 for p in live.pods() if p["spec"].get("nodeName")) >= 8, 60, "the example's pods bound"
    )


def assert_not_reloaded(page: Page) -> None:
    assert page.evaluate(NO_RELOAD_MARKER) is True, "the page was reloaded: the change did not come live"


def test_the_page_loads_and_shows_the_cluster_as_it_is_applied(live: Live, page: Page) -> None:
    expect(page.locator("#live")).to_have_text("live", timeout=WAIT_MS)
    expect(page.locator("#nodes")).to_contain_text("no nodes")

    for manifest in ("cluster.yaml", "workload.yaml"):
        result = live.podsched("apply", "-f", str(EXAMPLE / manifest))
        assert result.returncode == 0, result.stderr

    # Two 4-CPU nodes, eight 1-CPU pods bound: every cpu bar full, mid-priority and low-priority bands.
    cards = page.locator("article.node")
    expect(cards).to_have_count(2, timeout=WAIT_MS)
    expect(page.locator("article.node .chip")).to_have_count(8, timeout=WAIT_MS)
    for node in ("node-a", "node-b"):
        expect(page.locator(f'article.node[data-node="{node}"] .resource-label').first).to_have_text(
            "4 / 4", timeout=WAIT_MS
        )
    expect(page.locator("#legend")).to_contain_text("high-priority")
    expect(page.locator("#summary")).to_contain_text("8 bound")
    assert_not_reloaded(page)
    page.screenshot(path=str(live.output / "nodes.png"), full_page=True)


def test_a_what_if_draws_the_dry_run_answer_on_its_node_and_changes_nothing(live: Live, page: Page) -> None:
    example_applied(live)
    cli = live.podsched("apply", "--dry-run=server", "-f", str(EXAMPLE / "preemptor.yaml"))
    assert cli.returncode == 0, cli.stderr
    before = live.pods()

    page.goto(live.dashboard.url + "/#whatif")  # a hash change: the same document
    page.set_input_files("#whatif-file", str(EXAMPLE / "preemptor.yaml"))  # uploaded, not pasted
    expect(page.locator("#whatif-text")).to_have_value((EXAMPLE / "preemptor.yaml").read_text())
    page.click("#whatif-run")

    answer = page.locator(".whatif-answer")
    expect(answer).to_be_visible(timeout=WAIT_MS)
    # The CLI's answer: `would be nominated to node node-a after preempting default/batch-2, default/batch-4`.
    predicted = next(line for line in cli.stdout.splitlines() if "would be nominated" in line).strip()
    node = predicted.split("node ")[1].split(" ")[0]
    victims = predicted.split("after preempting ")[1].split(", ")
    expect(answer).to_contain_text(f"would be nominated to {node} after preempting {', '.join(victims)}")
    # Its node now, the victims marked; and after, without them and with the pod (2 CPUs for 2 x 1 CPU).
    now = answer.locator(f'article.node[data-node="{node}"][data-when="now"]')
    marked = now.locator(".chip.would-be-preempted")
    expect(marked).to_have_count(len(victims))
    assert sorted(marked.evaluate_all("chips => chips.map(c => c.dataset.pod)")) == sorted(victims)
    after = answer.locator(f'article.node[data-node="{node}"][data-when="after"]')
    expect(after.locator(".chip.incoming")).to_have_text("xyz-0")
    expect(after.locator('.bar[data-resource="cpu"] .segment.incoming')).to_have_count(1)
    expect(after.locator(".resource-label").first).to_have_text("4 / 4")
    for victim in victims:
        expect(after.locator(f'.chip[data-pod="{victim}"]')).to_have_count(0)
    assert live.pods() == before, "the what-if changed the cluster"
    assert_not_reloaded(page)
    page.screenshot(path=str(live.output / "whatif.png"), full_page=True)


@pytest.mark.parametrize(
    ("case", "manifest"),
    [
        pytest.param("malformed", "apiVersion: v1\nkind: Pod\nmetadata: {name: broken\n", id="malformed YAML"),
        pytest.param(
            "unknown-class",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  priorityClassName: no-such-class\n"
            "  containers: [{name: main, image: pause}]\n",
            id="an unknown PriorityClass",
        ),
    ],
)
def test_bad_what_if_input_shows_kubectls_error_and_changes_nothing(
    live: Live, page: Page, case: str, manifest: str
) -> None:
    # What the CLI prints for the same manifest, with the page's name for its source instead of the file's.
    path = live.output / f"{case}.yaml"
    path.write_text(manifest)
    cli = live.podsched("apply", "--dry-run=server", "-f", str(path))
    assert cli.returncode != 0
    expected = cli.stderr.strip().replace(str(path), "what-if")
    before = live.pods()

    page.goto(live.dashboard.url + "/#whatif")
    page.fill("#whatif-text", manifest)
    page.click("#whatif-run")
    expect(page.locator("#whatif-error")).to_have_text(expected, timeout=WAIT_MS)
    expect(page.locator(".whatif-answer")).to_have_count(0)
    assert live.pods() == before
    page.screenshot(path=str(live.output / f"whatif-{case}.png"))


def test_the_example_preemption_appears_in_the_timeline_and_on_the_nodes_without_reload(live: Live, page: Page) -> None:
    example_applied(live)
    page.goto(live.dashboard.url + "/#preemptions")
    expect(page.locator("#timeline")).to_contain_text("no preemptions yet", timeout=WAIT_MS)

    result = live.podsched("apply", "-f", str(EXAMPLE / "preemptor.yaml"))
    assert result.returncode == 0, result.stderr

    entry = page.locator('li.preemption[data-preemptor="default/xyz-0"]')
    expect(entry).to_be_visible(timeout=WAIT_MS)
    expect(entry.locator("li.victim")).to_have_count(2, timeout=WAIT_MS)
    # What the API says happened is what the page shows: the node, the victims and their grace.
    victims = sorted(
        f"{p['metadata']['namespace']}/{p['metadata']['name']}"
        for p in live.pods()
        if p["metadata"].get("deletionTimestamp")
    )
    node = entry.get_attribute("data-node")
    xyz = next(p for p in live.pods() if p["metadata"]["name"] == "xyz-0")
    assert node == xyz["status"]["nominatedNodeName"]
    assert sorted(entry.locator("li.victim").evaluate_all("items => items.map(i => i.dataset.pod)")) == victims
    expect(entry.locator("li.victim.terminating .countdown").first).to_have_text(re.compile(r"^\d+s$"), timeout=WAIT_MS)
    expect(entry).to_contain_text(f"nominated to {node}")
    page.screenshot(path=str(live.output / "preemptions.png"), full_page=True)

    # The nodes view: the victims striped on their node, the preemptor listed as nominated there.
    page.click('nav a[data-view="nodes"]')
    card = page.locator(f'article.node[data-node="{node}"]')
    expect(card.locator(".chip.terminating")).to_have_count(2, timeout=WAIT_MS)
    expect(card.locator(".nominated")).to_contain_text("xyz-0")
    expect(card.locator(".segment.terminating").first).to_be_visible()
    page.screenshot(path=str(live.output / "nodes-preempting.png"), full_page=True)

    # The queue: xyz-0 waits, nominated, with upstream's FailedScheduling message.
    page.click('nav a[data-view="queue"]')
    row = page.locator('tr[data-pod="default/xyz-0"]')
    expect(row).to_contain_text(node, timeout=WAIT_MS)
    expect(row.locator(".reason")).to_contain_text("Insufficient cpu")
    page.screenshot(path=str(live.output / "queue.png"), full_page=True)

    # The pod's page: what `podsched describe pod` prints, and its events.
    page.goto(live.dashboard.url + "/#pod/default/xyz-0")
    expect(page.locator("#object-describe")).to_contain_text(f"NominatedNodeName:\t{node}", timeout=WAIT_MS)
    expect(page.locator("#object-events")).to_contain_text("Nominated")
    assert_not_reloaded(page)


def test_the_timeline_links_to_the_preemptions_trace_in_jaeger(live: Live, page: Page) -> None:
    example_applied(live)  # and preempted (run alone, this test makes the preemption itself)
    result = live.podsched("apply", "-f", str(EXAMPLE / "preemptor.yaml"))
    assert result.returncode == 0, result.stderr
    page.goto(live.dashboard.url + "/#preemptions")
    link = page.locator('li.preemption[data-preemptor="default/xyz-0"] a.trace')
    expect(link).to_be_visible(timeout=WAIT_MS)
    href = link.evaluate("a => a.href")

    # The dashboard answers the link with a redirect to Jaeger once the spans have been exported.
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    location = ""
    for _ in range(60):
        try:
            opener.open(href, timeout=10)
        except urllib.error.HTTPError as error:
            if error.code == 307:
                location = error.headers["Location"]
                break
        page.wait_for_timeout(500)
    assert location.startswith(f"{live.jaeger.query_url}/trace/"), f"{href} did not lead to Jaeger: {location!r}"
    trace_id = location.rsplit("/", 1)[1]

    # The trace is the preemption's: its scheduling attempt for xyz-0 names the victims the timeline shows.
    trace = jaeger_api.get_trace(live.jaeger.query_url, trace_id)
    attempts = [
        {tag["key"]: tag["value"] for tag in span.get("tags", [])}
        for span in trace["spans"]
        if span["operationName"] == "scheduling attempt"
    ]
    nominating = [
        tags for tags in attempts if tags.get("k8s.pod.name") == "xyz-0" and tags.get("podsched.nominated_node")
    ]
    assert nominating, jaeger_api.render_trace_tree(trace)
    shown = page.locator('li.preemption[data-preemptor="default/xyz-0"] li.victim')
    assert sorted(json.loads(nominating[0]["podsched.victims"])) == sorted(
        shown.evaluate_all("items => items.map(i => i.dataset.pod)")
    )
    # And the browser follows the link to Jaeger.
    response = page.goto(href)
    assert response is not None and response.url == location
