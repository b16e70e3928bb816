"""A real browser for UI flows: headless Chromium driven by Selenium against pytest-django's live server.

Skips when Chromium or its driver is missing, unless ATELIER_REQUIRE_BROWSER=1 (CI), where it fails.
Screenshots go to ATELIER_SCREENSHOT_DIR (default test-screenshots/ in the repository) for a person to look at.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REQUIRE_BROWSER = os.environ.get("ATELIER_REQUIRE_BROWSER") == "1"
SCREENSHOTS = Path(os.environ.get("ATELIER_SCREENSHOT_DIR", ROOT / "test-screenshots"))


def _find(*names: str) -> str | None:
    return next((found for name in names if (found := shutil.which(name))), None)


class Browser:
    """The driver plus the live server's address and a screenshot helper."""

    def __init__(self, driver, base_url: str):
        self.driver, self.base_url = driver, base_url

    def get(self, path: str) -> None:
        self.driver.get(self.base_url + path)

    def shot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def wait(self, condition, timeout: float = 20.0):
        """Until `condition(driver)` is truthy. An element the condition found going stale (the page it was on was
        replaced between finding it and reading it, as after a login's redirect) is one more try, as a missing one is."""
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.driver, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(condition)

    def click_and_wait(self, css: str, timeout: float = 180.0) -> None:
        """Click something that loads a new page and wait until the new page has loaded (a click does not wait for the
        navigation it starts, so the next lookup could otherwise find the old page's elements).

        The old page is told apart by a mark set on its window, not by an element going stale: while Chromium swaps
        documents, asking about an old element can fail with a generic inspector error instead of a stale reference."""
        from selenium.common.exceptions import WebDriverException

        self.wait_loaded()
        self.mark_page()
        for attempt in range(3):  # a page still settling can detach the node between finding and clicking it: find it again
            try:
                self.find(css).click()
                break
            except WebDriverException:
                time.sleep(0.2)
                if not self.page_is_marked():  # the click went through after all: the page has moved on
                    break
                if attempt == 2:
                    raise
        self.wait(lambda d: self.page_is_loaded() and not self.page_is_marked(), timeout)

    def reload(self, timeout: float = 60.0) -> None:
        self.wait_loaded()
        self.mark_page()
        self.driver.refresh()
        self.wait(lambda d: self.page_is_loaded() and not self.page_is_marked(), timeout)

    def mark_page(self) -> None:
        """Mark the current page, so that a later check can tell whether the browser has loaded another one since."""
        self.driver.execute_script("window.__atelierMarked = true;")

    def page_is_marked(self) -> bool:
        """True while the marked page is still the one shown; a page in the middle of unloading counts as marked."""
        from selenium.common.exceptions import WebDriverException

        try:
            return bool(self.driver.execute_script("return window.__atelierMarked === true;"))
        except WebDriverException:
            return True

    def page_is_loaded(self) -> bool:
        from selenium.common.exceptions import WebDriverException

        try:
            return self.driver.execute_script("return document.readyState") == "complete"
        except WebDriverException:  # between documents
            return False

    def wait_loaded(self, timeout: float = 60.0) -> None:
        self.wait(lambda d: self.page_is_loaded(), timeout)

    def find(self, css: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, css)


@pytest.fixture(scope="session")
def chromium_driver():
    """One headless Chromium per test process (each xdist worker): starting one costs seconds, and `browser` gives
    every test a clean one (no cookies, storage, cache, logs or emulated size from the test before)."""
    chromium, chromedriver, webdriver = _browser_parts()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # console messages, CSP violations among them
    service = webdriver.ChromeService(executable_path=chromedriver)
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(180)  # the last task's submit evaluates the participant in-process
    try:
        yield driver
    finally:
        driver.quit()


WINDOW = (1280, 1000)


def clean_state(driver) -> None:
    """Leave the shared browser as a new one: one blank tab, no cookies or cache, no emulation, no logs (the site keeps
    nothing in the browser's storage)."""
    for handle in driver.window_handles[1:]:
        driver.switch_to.window(handle)
        driver.close()
    driver.switch_to.window(driver.window_handles[0])
    driver.get("about:blank")
    driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
    driver.execute_cdp_cmd("Network.clearBrowserCache", {})
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    driver.set_window_size(*WINDOW)
    driver.get_log("browser")  # reading the log empties it


@pytest.fixture
def chromium(chromium_driver):
    """The worker's Chromium, clean, for a site of the test's own (a deployment): no live server, so a test that uses
    only this touches no test database and runs once, in the SQLite pass."""
    clean_state(chromium_driver)
    yield chromium_driver
    clean_state(chromium_driver)


@pytest.fixture
def browser(chromium, live_server):
    """Chromium on pytest-django's live server (the test database)."""
    return Browser(chromium, live_server.url)


@pytest.fixture
def site_browser(chromium):
    """Chromium with the Browser helpers for a site the test started itself: it opens full URLs (driver.get)."""
    return Browser(chromium, base_url="")


# A walk through a site's pages (tests/test_demo.py): each page at several widths, failing on what a person would see go
# wrong there: a console error (CSP violations among them), a request answered 4xx/5xx or not at all (the page's own
# static files and images included, read from Chrome's performance log), or a page wider than its viewport.


def _browser_parts():
    """Chromium, its driver and selenium's webdriver module; skips (fails under ATELIER_REQUIRE_BROWSER=1) without one."""
    chromium, chromedriver = _find("chromium", "chromium-browser", "google-chrome"), _find("chromedriver")
    try:
        from selenium import webdriver
    except ImportError:
        webdriver = None
    if not (chromium and chromedriver and webdriver):
        missing = ", ".join(n for n, v in (("chromium", chromium), ("chromedriver", chromedriver), ("selenium", webdriver)) if not v)
        if REQUIRE_BROWSER:
            pytest.fail(f"a browser is required (ATELIER_REQUIRE_BROWSER=1) but {missing} is missing")
        pytest.skip(f"no browser: {missing} missing")
    return chromium, chromedriver, webdriver


@contextmanager
def network_browser(base_url: str) -> Iterator[Browser]:
    """A Chromium of its own that keeps Chrome's performance log besides the console's: its Network events give the
    status of every request a page makes. Started for one test and quit after it (the worker's shared browser keeps the
    console only: a performance log left on there would grow through every test). A context manager rather than a
    fixture, so that a test can do its other checks first and skip only this part where there is no browser."""
    chromium, chromedriver, webdriver = _browser_parts()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=chromedriver))
    driver.set_page_load_timeout(180)
    try:
        yield Browser(driver, base_url)
    finally:
        driver.quit()


def emulate_width(driver, width: int, height: int = 900) -> None:
    """A viewport `width` px wide; below 800 px a phone's (mobile: the page's meta viewport applies, as on a phone)."""
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 800}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)


def network_events(driver, quiet: float = 0.25, limit: float = 8.0) -> list[dict]:
    """The Network events of the performance log until no request is open and none began for `quiet` seconds (images,
    charts' scripts and fetches arrive after the load event), or `limit` seconds at most (a page that polls)."""
    events: list[dict] = []
    open_requests: set[str] = set()
    start = last = time.monotonic()
    while True:
        new = [json.loads(entry["message"])["message"] for entry in driver.get_log("performance")]
        new = [event for event in new if event["method"].startswith("Network.")]
        for event in new:
            if event["method"] == "Network.requestWillBeSent":
                open_requests.add(event["params"]["requestId"])
            elif event["method"] in ("Network.loadingFinished", "Network.loadingFailed"):
                open_requests.discard(event["params"]["requestId"])
        events += new
        now = time.monotonic()
        last = now if new else last
        if (not open_requests and now - last >= quiet) or now - start >= limit:
            return events
        time.sleep(0.05)


def failed_requests(events: list[dict], deliberate: Collection[tuple[str, int]] = ()) -> tuple[int, list[str]]:
    """How many requests the events show, and each one answered 4xx/5xx or not at all (blocked, refused), as
    'HTTP 404 http://…/static/x.css' or 'no answer (net::ERR_…, blocked: csp) http://…'. `deliberate`: (URL ending, status)
    pairs a page asks for on purpose."""
    urls: dict[str, str] = {}
    problems = []
    for event in events:
        params = event["params"]
        if event["method"] == "Network.requestWillBeSent":
            urls[params["requestId"]] = params["request"]["url"]
        elif event["method"] == "Network.responseReceived":
            url, status = params["response"]["url"], int(params["response"]["status"])
            if status >= 400 and not any(url.endswith(end) and status == code for end, code in deliberate):
                problems.append(f"HTTP {status} {url}")
        elif event["method"] == "Network.loadingFailed" and not params.get("canceled"):
            why = params.get("errorText", "") + (f", blocked: {params['blockedReason']}" if params.get("blockedReason") else "")
            problems.append(f"no answer ({why}) {urls.get(params['requestId'], params['requestId'])}")
    return len(urls), problems


def check_page(browser: Browser, path: str, width: int, deliberate: Collection[tuple[str, int]] = ()) -> tuple[int, list[str]]:
    """Load `path` afresh at `width` and return how many requests it made and what went wrong: SEVERE console entries
    (script errors, CSP violations, failed loads), failed requests, and a document wider than the viewport."""
    driver = browser.driver
    driver.get("about:blank")  # a fresh load even where only the width or the #fragment differs from the page before
    emulate_width(driver, width)
    driver.get_log("browser")  # reading a log empties it: forget the page before
    driver.get_log("performance")
    browser.get(path)
    browser.wait_loaded()
    requests, problems = failed_requests(network_events(driver), deliberate)
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    problems = [f"console: {error}" for error in errors if not _deliberate_failure(error, deliberate)] + problems
    wide, viewport = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    if wide > min(viewport, width):  # a phone zooms out to fit what sticks out: innerWidth can grow past the screen's
        problems.append(f"wider than the viewport: {wide} px in {min(viewport, width)} px")
    return requests, problems


def _deliberate_failure(message: str, deliberate: Collection[tuple[str, int]]) -> bool:
    """Chromium's console line for a deliberate 4xx/5xx: 'http://…/x - Failed to load resource: … status of 404 (…)'."""
    url, _, rest = message.partition(" - Failed to load resource: ")
    return any(url.endswith(end) and f"status of {code} " in rest for end, code in deliberate)
