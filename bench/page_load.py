"""How fast a board page loads in a real browser, and where its first ranked row lands (issue 42).

    .venv/bin/python bench/page_load.py --url http://127.0.0.1:8000/ [--loads 10] [--widths 390 1400] [--height 844]
                                        [--warm]

Starts nothing: it loads the page at --url of a site already running (e.g. `make serve`), --loads times at each
width in headless Chromium (a phone's emulated viewport below 800 px, as tests/test_phone_widths.py does), each load
with an empty browser cache unless --warm, and prints per width the median and p90 of DOMContentLoaded and load (the
Navigation Timing API's domContentLoadedEventEnd and loadEventEnd, ms from the start of navigation), the bytes the
page and its files came over the wire, and the first ranked row's overall score cell (its top and bottom, px from the
top of the page: on the first screen when the bottom is at most the window's height) and how many of the board's rows
are wholly on the first screen. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time

# Read once the load event is over: loadEventEnd is 0 while it runs.
MEASURE = """
const nav = performance.getEntriesByType('navigation')[0];
if (!nav || !nav.loadEventEnd) return null;
const files = performance.getEntriesByType('resource');
const rows = [...document.querySelectorAll('#board-table > tbody:first-of-type > tr')];
const ranked = rows.find((row) => !row.querySelector('.unranked'));
const cell = ranked ? ranked.querySelectorAll('td')[2].getBoundingClientRect() : null;
return {dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd,
        bytes: nav.transferSize + files.reduce((sum, f) => sum + f.transferSize, 0),
        scripts_before_dcl: files.filter((f) => f.initiatorType === 'script' || f.name.endsWith('.js'))
          .filter((f) => f.responseEnd <= nav.domContentLoadedEventStart).map((f) => f.name.split('/').pop()),
        top: cell && cell.top + window.scrollY, bottom: cell && cell.bottom + window.scrollY,
        in_view: rows.filter((row) => row.getBoundingClientRect().bottom + window.scrollY <= window.innerHeight).length};
"""


def driver_start():
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=shutil.which("chromedriver")))


def load_once(driver, url: str, warm: bool) -> dict:
    if not warm:
        driver.execute_cdp_cmd("Network.clearBrowserCache", {})
    driver.get("about:blank")
    driver.get(url)
    deadline = time.monotonic() + 60
    while (figures := driver.execute_script(MEASURE)) is None:
        if time.monotonic() > deadline:
            raise SystemExit(f"{url} did not finish loading in 60 s")
        time.sleep(0.05)
    return figures


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def summary(width: int, height: int, runs: list[dict]) -> str:
    dcl, load = [r["dcl"] for r in runs], [r["load"] for r in runs]
    first = runs[-1]
    row = "no ranked row" if first["top"] is None else f"first ranked score at y {first['top']:.0f}–{first['bottom']:.0f} px"
    seen = "on" if first["bottom"] is not None and first["bottom"] <= height else "not on"
    early = ", ".join(sorted(set(first["scripts_before_dcl"]))) or "none"
    return (
        f"{width} x {height}: DOMContentLoaded median {statistics.median(dcl):.0f} ms, p90 {p90(dcl):.0f} ms; "
        f"load median {statistics.median(load):.0f} ms, p90 {p90(load):.0f} ms; "
        f"{statistics.median(r['bytes'] for r in runs) / 1e6:.2f} MB over the wire; {row} ({seen} the first screen); "
        f"{first['in_view']} row{'s' if first['in_view'] != 1 else ''} wholly on it; "
        f"scripts fetched before DOMContentLoaded: {early}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="a board page of a running site, e.g. http://127.0.0.1:8000/")
    parser.add_argument("--loads", type=int, default=10, help="loads per width (default 10)")
    parser.add_argument("--widths", type=int, nargs="+", default=[390, 1400])
    parser.add_argument("--height", type=int, default=844, help="window height in px (default 844, a phone's)")
    parser.add_argument("--warm", action="store_true", help="keep the browser cache between loads")
    args = parser.parse_args()
    driver = driver_start()
    lines = []
    try:
        for width in args.widths:
            driver.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride", {"width": width, "height": args.height, "deviceScaleFactor": 1, "mobile": width < 800}
            )
            load_once(driver, args.url, args.warm)  # a first load warms the server (its caches, imports)
            runs = []
            for i in range(args.loads):
                runs.append(load_once(driver, args.url, args.warm))
                print(
                    f"{width} px load {i + 1}/{args.loads}: DCL {runs[-1]['dcl']:.0f} ms, load {runs[-1]['load']:.0f} ms", file=sys.stderr
                )
            lines.append(summary(width, args.height, runs))
    finally:
        driver.quit()
    print(f"{args.url}, {args.loads} loads a width, {'warm' if args.warm else 'empty'} cache:")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
