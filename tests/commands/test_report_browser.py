"""`prefcraft report` and the MLflow UI as a person sees them, in headless Chromium.

Real commands on the embedded model fill a store; the report is served over loopback and `mlflow server` runs over the
same store; both pages are checked in the DOM Chromium rendered (the MLflow UI is a React app: its raw HTML holds no
run names).
"""

import base64
import functools
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import mlflow
import pytest
from matplotlib.image import imread

from prefcraft.backends import free_port
from prefcraft.commands.main import main
from prefcraft.components.synthesizeme.evaluation import PERSONAL_JUDGE
from prefcraft.html_report.sections import number
from prefcraft.optimizers.artifacts import save_compiled
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.tracking.models import CHAMPION, log_program, registered_name

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.server,
    pytest.mark.skipif(not CHROMIUM.is_file(), reason="needs Debian's chromium at /usr/bin/chromium "
                       "(apt-get install -y --no-install-recommends chromium; .ci/run installs it)"),
]
SERVER_START_S = 180


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        """No request log on the test's output."""


@contextmanager
def served(directory: Path) -> Iterator[str]:
    """`directory` over HTTP on loopback, from a thread of this process."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def mlflow_server(store_uri: str, workdir: Path) -> Iterator[str]:
    """`mlflow server` over the store; its job runner off, without which 3.17 never listens here (notes 10)."""
    port = free_port()
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    command = [str(Path(sys.executable).with_name("mlflow")), "server", "--backend-store-uri", store_uri,
               "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    log_path = workdir / "mlflow-server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=workdir,
                                   start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while not _answers(f"{url}/health"):
            assert process.poll() is None, f"mlflow server exited:\n{log_path.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"mlflow server not up in {SERVER_START_S} s:\n{log_path.read_text()}"
            time.sleep(1)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # its own session: the server and the workers it started
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def rendered_dom(url: str, profile: Path, expected: list[str], attempts: int = 3) -> str:
    """The DOM after Chromium ran the page's scripts; rendered again, with more time, while an expected text is
    missing (a loaded machine can be slow to fetch the runs)."""
    for attempt in range(1, attempts + 1):
        result = subprocess.run(
            [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
             "--dump-dom", f"--virtual-time-budget={15000 * attempt}", url],
            capture_output=True, text=True, timeout=300, check=True)
        if all(text in result.stdout for text in expected):
            break
    return result.stdout


def test_the_report_and_the_mlflow_ui_show_the_runs_of_real_commands(embedded_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MLflow's artifacts go under the working directory
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    flags = ["--no-serve", "--task-api-base", embedded_server.base_url, "--task-max-tokens", "128",
             "--task-timeout-s", "300", "--threads", "2", "--tracking-uri", uri, "--cache-dir", str(tmp_path / "cache")]
    assert main(["synthesizeme", "evaluate", *flags, "--users", "sample_user_07", "--methods", "baseline",
                 "--output-dir", str(tmp_path / "synthesizeme")]) == 0
    assert main(["cupid", "evaluate", *flags, "--output-dir", str(tmp_path / "cupid"), "--max-instances", "1",
                 "--no-shipped", "--responses", "gold"]) == 0
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("prefcraft")
    with pytest.raises(RuntimeError), mlflow.start_run(run_name="cupid-compile"):  # what a compile that died leaves
        mlflow.log_metric("eval", 37.5)
        raise RuntimeError("the server died")
    runs = {run.info.run_name: run for run in mlflow.search_runs(experiment_names=["prefcraft"], output_format="list")}
    accuracy = runs["evaluate"].data.metrics["baseline_accuracy"]
    f1 = runs["infer-all"].data.metrics["f1"]

    judge = registered_name(PERSONAL_JUDGE, "SmolLM2-135M-Instruct", "sample_user_07")
    path = save_compiled(PreferenceJudge("Likes short answers."), tmp_path / "judge.json", program_name=PERSONAL_JUDGE,
                         user_id="sample_user_07", persona="Likes short answers.")
    with mlflow.start_run(run_name="fit"):  # what a SynthesizeMe fit logs for its user (tested in test_model_registry)
        log_program(path, name=PERSONAL_JUDGE, request=None, metadata={"user_id": "sample_user_07"}, promote_as=judge)

    experiment_id = mlflow.get_experiment_by_name("prefcraft").experiment_id
    site = tmp_path / "site"
    with mlflow_server(uri, tmp_path) as ui:
        assert main(["report", "--tracking-uri", uri, "--output", str(site / "report.html"), "--mlflow-ui", ui]) == 0
        with served(site) as base:
            report = rendered_dom(f"{base}/report.html", tmp_path / "chromium", ["Cost"])
        expected = ["prefcraft", "cupid-evaluate", "cupid-compile"]
        page = rendered_dom(f"{ui}/#/experiments/{experiment_id}/runs", tmp_path / "chromium", expected)
        [version_link] = re.findall(r'<a href="([^"]+)">' + re.escape(f"{judge} v1") + "</a>", report)
        version_page = rendered_dom(version_link, tmp_path / "chromium", [judge, CHAMPION])
    for name in ("evaluate", "sample_user_07", "cupid-evaluate", "infer-all", "respond-gold"):
        assert name in report, name
    assert f"<td>baseline_accuracy</td><td>{number(accuracy)}</td>" in report
    assert f"<td>infer-all: f1</td><td>{number(f1)}</td>" in report  # a child run's, listed under its command
    assert re.search(r'<tr class="failed"><td>cupid-compile</td>.*?<td class="status">FAILED</td>', report)
    for heading in ("Optimizer trajectories", "Baseline against personalized", "Spread over users and categories",
                    "Compiled programs", "Cost"):
        assert f"<h2>{heading}</h2>" in report
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', report)
    assert len(images) >= 5  # trajectory, two comparisons, two spreads, cost
    for data in images:
        pixels = imread(io.BytesIO(base64.b64decode(data)), format="png")
        assert pixels.shape[0] > 100 and pixels.shape[1] > 100 and pixels.std() > 0

    for text in expected:
        assert text in page, f"{text} not rendered by the MLflow UI"
    assert re.search(r">evaluate<", page), "the evaluate run not rendered by the MLflow UI"
    # The report's link opens the judge's registered version in the MLflow UI, its alias beside it.
    assert version_link == f"{ui}/#/models/{judge}/versions/1"
    assert judge in version_page and CHAMPION in version_page, "the model version not rendered by the MLflow UI"
