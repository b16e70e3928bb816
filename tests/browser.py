"""A real browser for UI flows: headless Chromium driven by Selenium against pytest-django's live server.

Skips when Chromium or its driver is missing, unless ATELIER_REQUIRE_BROWSER=1 (CI), where it fails.
Screenshots go to ATELIER_SCREENSHOT_DIR (default test-screenshots/ in the repository) for a person to look at.
"""

from __future__ import annotations

import os
import shutil
import time
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
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.driver, timeout).until(condition)

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
