"""A real browser for UI flows: headless Chromium driven by Selenium against pytest-django's live server.

Skips when Chromium or its driver is missing, unless ATELIER_REQUIRE_BROWSER=1 (CI), where it fails.
Screenshots go to ATELIER_SCREENSHOT_DIR (default test-screenshots/ in the repository) for a person to look at.
"""

from __future__ import annotations

import os
import shutil
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
        """Click something that loads a new page and wait until the old page is gone (a click does not wait for the
        navigation it starts, so the next lookup could otherwise find the old page's elements)."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions

        from selenium.common.exceptions import WebDriverException

        for attempt in range(3):  # a page still settling can detach the node between finding and clicking it: find it again
            self.wait_loaded()
            try:
                old = self.driver.find_element(By.TAG_NAME, "html")
                self.find(css).click()
                break
            except WebDriverException:
                if attempt == 2:
                    raise
        self.wait(expected_conditions.staleness_of(old), timeout)
        self.wait_loaded()

    def wait_loaded(self, timeout: float = 60.0) -> None:
        self.wait(lambda d: d.execute_script("return document.readyState") == "complete", timeout)

    def find(self, css: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, css)


@pytest.fixture
def browser(live_server):
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
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(argument)
    service = webdriver.ChromeService(executable_path=chromedriver)
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(180)  # the last task's submit evaluates the participant in-process
    try:
        yield Browser(driver, live_server.url)
    finally:
        driver.quit()
