"""The explorer in a real browser: notebook 00 in JupyterLab, driven through headless Chromium.

On small simulated data with a few cells never run (so grids have gaps and plans), the test opens
``00_explore``, runs all cells, then drives every control by keyboard or selection (no pixel
drags). After each step it waits for the panes that control must change, asserts what they now
say against the tables computed here with polars, checks that the browser console holds no error,
and saves a screenshot. It ends by checking the layout at 1500 and 1024 px wide: no scroll box
inside the explorer, the cap slider wide enough to step through, the status buttons on one line.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import polars as pl
import pytest
from browser_helpers import (
    KERNEL_IDLE_SECONDS,
    KERNEL_START_SECONDS,
    LOAD_ATTEMPTS,
    NETWORK_CHANGED,
    connection_dropped,
    load_page,
)
from papermill.iorw import load_notebook_node
from papermill.parameterize import parameterize_notebook

from depthlab import reproduce
from depthlab.reproduce import audit_data
from depthlab.simulate import write_runs

pytestmark = pytest.mark.browser

NOTEBOOK = "00_explore.ipynb"
IDLE_KERNEL = ".jp-Notebook-ExecutionIndicator[data-status='idle']"
#: Job folders removed from the simulated data, so some tasks have cells never run (and plans).
NEVER_RUN = ("tb2/tb2__sim-model-b__cap-01", "tb2/tb2__sim-model-a__cap-02")
WAIT = 30  # seconds a pane has to follow a control
#: Screenshots land here (out/ is gitignored); CI keeps the folder as the test's artifacts.
ARTIFACTS = Path(os.environ.get("DEPTHLAB_BROWSER_ARTIFACTS", Path(__file__).resolve().parents[2] / "out" / "browser"))


def workspace_setup(workspace: Path) -> None:
    """Fill the workspace: simulated data and notebook 00 with its parameters injected (the lab fixture calls this)."""
    data = workspace / "data"
    write_runs(data, seed=0, scale=0.03)
    for folder in NEVER_RUN:
        shutil.rmtree(data / "jobs" / folder)
    nb = load_notebook_node(str(reproduce.notebooks_dir() / NOTEBOOK))
    parameters = {"data": str(data), "figures_dir": str(workspace / "figures"), "n_boot": 50}
    nbformat.write(parameterize_notebook(nb, parameters), workspace / NOTEBOOK)


# --------------------------------------------------------------------------------------------
# reading the page


class Page:
    """The explorer as the browser shows it, read through the DOM."""

    def __init__(self, driver: Any, artifacts: Path) -> None:
        self.driver = driver
        self.artifacts = artifacts
        self.shots = 0

    def find(self, css: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, f".dl-explorer {css}")

    def text(self, css: str) -> str:
        return str(self.find(css).get_attribute("textContent"))

    def options(self, css: str) -> list[str]:
        return [str(o.get_attribute("textContent")) for o in self.find(css).find_elements("css selector", "option")]

    def state(self) -> dict[str, Any]:
        """Everything the panes show, read in one script (the DOM changes under a reader that takes turns)."""
        return dict(self.driver.execute_script(STATE_JS))

    def console_errors(self) -> list[str]:
        # Chromium aborts a request in flight with ERR_NETWORK_CHANGED when the host's interfaces change
        # (Docker tests beside this one add and remove bridges); JupyterLab polls again, the page is unharmed
        return [
            entry["message"]
            for entry in self.driver.get_log("browser")
            if entry["level"] == "SEVERE" and NETWORK_CHANGED not in entry["message"]
        ]

    def shot(self, name: str) -> Path:
        self.shots += 1
        path = self.artifacts / f"{self.shots:02d}-{name}.png"
        explorers = self.driver.find_elements("css selector", ".dl-explorer")
        if explorers:
            self.driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", explorers[0])
        self.driver.save_screenshot(str(path))
        return path

    def step(self, name: str, act: Callable[[], None], changes: tuple[str, ...]) -> dict[str, Any]:
        """Do ``act``; wait until every pane in ``changes`` differs from before; return the new state."""
        from selenium.webdriver.support.wait import WebDriverWait

        before = self.state()
        act()
        try:
            WebDriverWait(self.driver, WAIT, poll_frequency=0.2).until(
                lambda _: all(self.state()[pane] != before[pane] for pane in changes)
            )
        except Exception as exc:  # selenium's TimeoutException; report which panes stood still
            after = self.state()
            still = [pane for pane in changes if after[pane] == before[pane]]
            self.shot(f"{name}-FAILED")
            raise AssertionError(f"step {name!r}: {still} did not change within {WAIT} s") from exc
        # let the last messages of this step land before reading the console
        state = self._settled()
        errors = self.console_errors()
        self.shot(name)
        assert not errors, f"step {name!r}: browser console errors: {errors}"
        return state

    def _settled(self) -> dict[str, Any]:
        """The panes once the kernel is idle and two reads 0.3 s apart agree (every update of the step landed)."""
        import time

        state, calm = self.state(), 0
        for _ in range(200):
            time.sleep(0.3)
            now = self.state()
            idle = bool(self.driver.find_elements("css selector", IDLE_KERNEL))
            calm = calm + 1 if idle and now == state else 0
            if calm >= 2:
                return now
            state = now
        return state


def _run_all(driver: Any) -> None:
    """Run > Run All Cells from the menu bar; again if no cell started (the menu may open before the kernel is up)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    def started(_: Any) -> bool:
        prompts = driver.find_elements(By.CSS_SELECTOR, ".jp-Cell .jp-InputPrompt")
        # "[*]:" while running, "[3]:" once run; a cell never run shows "[ ]:" (with a no-break space)
        return any(re.search(r"\[(\*|\d+)\]", p.get_attribute("textContent")) for p in prompts)

    for _ in range(5):
        driver.find_element(By.XPATH, "//div[contains(@class,'lm-MenuBar-itemLabel') and text()='Run']").click()
        item = WebDriverWait(driver, 10).until(
            lambda d: d.find_element(
                By.XPATH,
                "//li[contains(@class,'lm-Menu-item') and not(contains(@class,'lm-mod-disabled'))]"
                "[.//div[contains(@class,'lm-Menu-itemLabel') and text()='Run All Cells']]",
            )
        )
        item.click()
        try:
            # generous: a loaded machine starts the kernel slowly, and a second Run All would queue a second run
            WebDriverWait(driver, 60, poll_frequency=0.3).until(started)
            return
        except Exception:  # selenium's TimeoutException: open the menu again
            continue
    raise AssertionError("Run All Cells did not start any cell")


def _run_finished(driver: Any) -> bool:
    """Whether Run All is over: the kernel idle, no cell queued or running ("[*]"), one at least run.

    A cell that raised stops the run with the later cells unnumbered, so "every cell numbered" would
    wait out the whole budget on an error that is already on the page.
    """
    from selenium.webdriver.common.by import By

    if not driver.find_elements(By.CSS_SELECTOR, IDLE_KERNEL):
        return False
    cells = driver.find_elements(By.CSS_SELECTOR, ".jp-CodeCell .jp-InputPrompt")
    prompts = [str(cell.get_attribute("textContent")) for cell in cells]
    return not any("[*]" in p for p in prompts) and any(re.search(r"\[\d+\]", p) for p in prompts)


class KernelNeverIdle(Exception):
    """A freshly opened notebook whose kernel never showed idle: the page is opened again (bounded times)."""


def _open_explorer(driver: Any) -> None:
    """Wait for the notebook and its kernel, Run All, and wait for the explorer (raises when it does not show).

    The waits follow progress, not the clock: a busy kernel on a loaded machine is waited for (up to
    :data:`KERNEL_START_SECONDS`), while a run that ended without the explorer fails at once.
    """
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.wait import WebDriverWait

    wait = WebDriverWait(driver, KERNEL_START_SECONDS, poll_frequency=0.5)
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".jp-Notebook .jp-Cell")))
    try:
        WebDriverWait(driver, KERNEL_IDLE_SECONDS, poll_frequency=0.5).until(
            ec.presence_of_element_located((By.CSS_SELECTOR, IDLE_KERNEL))
        )
    except Exception as exc:  # selenium's TimeoutException: the page's kernel connection never came up
        raise KernelNeverIdle(f"the kernel showed no idle state in {KERNEL_IDLE_SECONDS} s") from exc
    _run_all(driver)
    explorer = (By.CSS_SELECTOR, ".dl-explorer .dl-task-caption")
    wait.until(lambda d: d.find_elements(*explorer) or _run_finished(d))
    if not driver.find_elements(*explorer):
        # the run may have finished a moment before the widget rendered: a short grace, then it is a failure
        WebDriverWait(driver, WAIT, poll_frequency=0.5).until(ec.presence_of_element_located(explorer))
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, IDLE_KERNEL)))


def _key(element: Any, *keys: str) -> None:
    element.send_keys(*keys)


# --------------------------------------------------------------------------------------------
# the test


def test_every_control_drives_every_pane_in_jupyterlab(lab: Any, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.select import Select

    artifacts = ARTIFACTS
    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.mkdir(parents=True)
    page = Page(browser, artifacts)
    data = audit_data(lab.workspace / "data")
    trials, audit = data.trials, data.audit

    # open the notebook and run every cell through the Run menu; opened again (a bounded number of
    # times) only when the kernel's connection dropped under it, which leaves the widget without its model
    for opening in range(1, LOAD_ATTEMPTS + 1):
        log_start = lab.log.stat().st_size if lab.log.exists() else 0
        load_page(browser, f"{lab.url}/lab/tree/{NOTEBOOK}?token={lab.token}")
        try:
            _open_explorer(browser)
            break
        except Exception as exc:
            severe = [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
            dropped = connection_dropped(severe, lab.log.read_bytes()[log_start:].decode(errors="replace"))
            page.shot(f"open-FAILED-{opening}")
            if (dropped or isinstance(exc, KernelNeverIdle)) and opening < LOAD_ATTEMPTS:
                continue
            shutil.copy(lab.log, artifacts / "jupyter.log")
            outputs = [
                o.get_attribute("textContent")[:300] for o in browser.find_elements(By.CSS_SELECTOR, ".jp-OutputArea")
            ]
            kernel = [k.get_attribute("textContent") for k in browser.find_elements(By.CSS_SELECTOR, ".jp-KernelName")]
            raise AssertionError(
                f"notebook 00 did not show the explorer (kernel {kernel!r}, opened {opening} time(s), the kernel's "
                f"connection dropped: {dropped}); outputs: {outputs}; console: {severe[-5:]}"
            ) from exc
    # the file browser closed by keyboard, as a reader on a small screen would, so the notebook has the width
    browser.find_element(By.CSS_SELECTOR, "body").send_keys(Keys.CONTROL, "b")
    state = page._settled()
    page.shot("opened")
    assert not page.console_errors(), page.console_errors()

    tb2 = trials.filter(pl.col("dataset") == "tb2")
    assert state["task_caption"].startswith("every task of tb2")
    assert len(state["tasks"]) == audit.filter(pl.col("dataset") == "tb2").height
    first_task = sorted(audit.filter(pl.col("dataset") == "tb2")["task"].to_list())[0]
    assert state["tasks"][0].startswith(first_task)
    assert f"{tb2.filter(pl.col('task') == first_task).height} runs of {first_task}" in state["runs_caption"]

    # collection, by selection
    collection = Select(page.find(".dl-collection select"))
    state = page.step(
        "collection-tmax",
        lambda: collection.select_by_visible_text("tmax"),
        ("task_caption", "tasks", "grid_caption", "grid", "runs_caption", "runs", "run_view"),
    )
    assert state["task_caption"].startswith("every task of tmax")
    assert len(state["tasks"]) == audit.filter(pl.col("dataset") == "tmax").height
    state = page.step(
        "collection-tb2",
        lambda: collection.select_by_visible_text("tb2"),
        ("task_caption", "tasks", "grid_caption", "grid", "runs_caption", "runs", "run_view"),
    )
    task = state["tasks"][0].split()[0]
    assert task == first_task

    # models, by selection: keep model-b alone
    models = Select(page.find(".dl-models select"))
    state = page.step(
        "models-b",
        lambda: models.deselect_by_visible_text("sim/model-a"),
        ("task_caption", "grid_caption", "grid", "runs_caption", "runs"),
    )
    by_b = tb2.filter((pl.col("task") == task) & (pl.col("model") == "sim/model-b"))
    assert f"{by_b.height} runs of {task} by sim/model-b" in state["runs_caption"]
    assert all("sim/model-b" in run for run in state["runs"])
    assert "over 1 chosen model" in state["grid_caption"]

    # cap, by keyboard: all -> uncapped -> 1 -> 2 -> 3
    handle = page.find(".dl-cap .noUi-handle")
    state = page.step("cap-uncapped", lambda: _key(handle, Keys.ARROW_RIGHT), ("task_caption", "runs_caption", "runs"))
    assert "without a stated cap" in state["task_caption"]
    assert all(run.startswith("uncapped") for run in state["runs"])
    state = page.step(
        "cap-1", lambda: _key(handle, Keys.ARROW_RIGHT), ("task_caption", "grid_caption", "grid", "runs_caption")
    )
    assert "at stated cap 1" in state["task_caption"]
    # model-b's cap-1 runs of tb2 were never written: the panes say so
    assert "none at stated cap 1" in state["task_caption"]
    assert state["tasks"] == []
    assert "no task is selected" in state["grid_caption"]
    state = page.step(
        "cap-3",
        lambda: _key(handle, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT),
        ("task_caption", "tasks", "grid_caption", "runs_caption", "runs"),
    )
    at_3 = tb2.filter((pl.col("cap") == 3) & (pl.col("model") == "sim/model-b"))
    assert f"{at_3.height} runs by sim/model-b at stated cap 3" in state["task_caption"]
    assert sorted(t.split()[0] for t in state["tasks"]) == sorted(at_3["task"].unique().to_list())
    assert all(run.startswith("cap 3 · sim/model-b") for run in state["runs"]), state["runs"]
    assert "Shaded: stated cap 3" in state["grid_caption"]

    # status, by keyboard on the toggle buttons
    def press(label: str) -> Callable[[], None]:
        button = None
        for candidate in page.find(".dl-status").find_elements(By.CSS_SELECTOR, "button"):
            if candidate.get_attribute("textContent").strip() == label:
                button = candidate
        assert button is not None, label
        return lambda: _key(button, Keys.SPACE)

    expected_fail = at_3.filter(pl.col("status") == "fail")
    changes = ("task_caption", "runs_caption") if expected_fail.height else ("task_caption",)
    state = page.step("status-fail", press("fail"), changes)
    assert "with status fail" in state["task_caption"] or "none with status fail" in state["task_caption"]
    assert all(run.endswith("turns") or "fail" in run for run in state["runs"])
    assert all(" · fail · " in run for run in state["runs"])
    state = page.step("status-all", press("all"), ("task_caption", "runs_caption"))

    # models back to both, by selection
    state = page.step(
        "models-both",
        lambda: models.select_by_visible_text("sim/model-a"),
        ("task_caption", "grid_caption", "runs_caption", "runs"),
    )
    assert "over 2 chosen models" in state["grid_caption"]

    # task, by selection in the task list (JupyterLab takes a focused list's arrow keys for its cell cursor)
    task_list = Select(page.find(".dl-tasks select"))
    selected = task_list.first_selected_option.get_attribute("textContent")
    state = page.step(
        "task-second",
        lambda: task_list.select_by_index(1),
        ("grid_caption", "grid", "runs_caption", "runs", "run_view"),
    )
    now = Select(page.find(".dl-tasks select")).first_selected_option.get_attribute("textContent")
    assert now != selected
    task = now.split()[0]
    assert f"Evidence of {task}" in state["grid_caption"]
    at_3_task = tb2.filter((pl.col("cap") == 3) & (pl.col("task") == task))
    assert len(state["runs"]) == at_3_task.height

    # run, by selection in the run chooser
    runs = Select(page.find(".dl-run select"))
    assert len(state["runs"]) > 1  # both models ran every task at cap 3
    label = state["runs"][-1]
    state = page.step("run-last", lambda: runs.select_by_index(len(state["runs"]) - 1), ("grid", "run_view"))
    model = label.split(" · ")[1]
    assert f"· {model} · stated cap 3" in state["run_view"]
    assert f"Outlined: the chosen run ({model}, cap 3)" in state["grid_caption"]

    # layout at the two widths a reader uses
    for width in (1500, 1024):
        browser.set_window_size(width, 1000)
        page._settled()
        layout = browser.execute_script(LAYOUT_JS)
        page.shot(f"layout-{width}")
        assert layout["scrollBoxes"] == [], f"{width} px: scroll boxes inside the explorer: {layout['scrollBoxes']}"
        assert layout["sliderTrack"] >= 250, f"{width} px: the cap slider's track is {layout['sliderTrack']} px"
        assert len(set(layout["statusTops"])) == 1, f"{width} px: the status buttons wrap: {layout['statusTops']}"
        assert min(layout["controlWidths"]) >= 150, f"{width} px: a control shrank: {layout['controlWidths']}"
        assert layout["wider"] == [], f"{width} px: parts of the explorer stick out of its cell: {layout['wider']}"
    assert not page.console_errors()


# what each pane shows: caption texts, the options of the two lists, the grid image's source
STATE_JS = """
const root = document.querySelector('.dl-explorer');
const text = css => root.querySelector(css).textContent;
// option labels come with no-break spaces (ipywidgets keeps runs of spaces that way): read them as spaces
const options = css => [...root.querySelectorAll(css + ' option')].map(o => o.textContent.replace(/\u00a0/g, ' '));
const grid = root.querySelector('.dl-grid');
return {task_caption: text('.dl-task-caption'), tasks: options('.dl-tasks select'),
        grid_caption: text('.dl-grid-caption'), grid: grid.offsetParent === null ? null : grid.src,
        runs_caption: text('.dl-runs-caption'), runs: options('.dl-run select'), run_view: text('.dl-run-view')};
"""

# measured in the page: scroll boxes inside the explorer (the native lists excepted), the slider's
# track, the status buttons' tops, the controls' widths and any horizontal overflow
LAYOUT_JS = """
const root = document.querySelector('.dl-explorer');
const boxes = [];
for (const el of root.querySelectorAll('*')) {
  if (el.tagName === 'SELECT' || el.tagName === 'OPTION') continue;
  const style = getComputedStyle(el);
  const scrolls = ['auto', 'scroll'].includes(style.overflowY) && el.scrollHeight > el.clientHeight + 1;
  const scrollsX = ['auto', 'scroll'].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 1;
  if (scrolls || scrollsX) boxes.push(el.className || el.tagName);
}
const track = root.querySelector('.dl-cap .noUi-target') || root.querySelector('.dl-cap .slider');
const tops = [...root.querySelectorAll('.dl-status button')].map(b => Math.round(b.getBoundingClientRect().top));
const controls = ['.dl-collection select', '.dl-models select', '.dl-cap', '.dl-status', '.dl-tasks select']
  .map(css => Math.round(root.querySelector(css).getBoundingClientRect().width));
const area = root.closest('.jp-OutputArea-output') || root.parentElement;
const right = area.getBoundingClientRect().right;
const wide = [...root.querySelectorAll('*')].filter(el => el.getBoundingClientRect().right > right + 1)
  .map(el => (el.className || el.tagName) + ' ' + Math.round(el.getBoundingClientRect().right - right));
return {scrollBoxes: boxes, sliderTrack: Math.round(track.getBoundingClientRect().width), statusTops: tops,
        controlWidths: controls, wider: wide.slice(0, 5)};
"""
