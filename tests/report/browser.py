"""A report opened in a real headless browser (Debian's chromium through selenium), as a user opens
it."""

import shutil
from pathlib import Path

from jgtest.report.html import SECTIONS
from jgtest.report.verdicts import NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED

VERDICTS = (REPRODUCED, NOT_REPRODUCED, NOT_COMPARABLE)


def _browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert binary and driver, (
        "chromium and chromedriver come from scripts/install_system_packages.sh (Debian's "
        "chromium, chromium-driver)"
    )
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1280,2000",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(driver))


def check_report_in_browser(
    report: Path,
    screenshot: Path,
    absent: set[str],
    budgets: int | None = None,
    min_images: int = 1,
    verdicts: int = 0,
) -> None:
    """The page loads with no console errors; each section is there with its heading and filled,
    but those in ``absent``, which are not on the page at all (nor in its navigation); the budgets
    table has ``budgets`` rows beside the paper's (when given);
    the page opens on what is broken: the bugs counted per game and kind, then grouped, the first
    group open, each distinct bug with its replay command and a view; every image (at least
    ``min_images``) decodes; a screenshot is taken. With ``verdicts``, the page opens on the
    verdict table, that many campaigns each with a verdict, before what is broken."""
    from selenium.webdriver.common.by import By

    browser = _browser()
    try:
        browser.get(report.resolve().as_uri())
        assert [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"] == []
        for section, heading in SECTIONS:
            found = browser.find_elements(By.ID, section)
            linked = browser.find_elements(By.CSS_SELECTOR, f'nav a[href="#{section}"]')
            if section in absent:
                assert not found and not linked, f"the report shows section {section}"
                continue
            assert found and linked, f"the report lacks section {section}"
            assert found[0].find_element(By.TAG_NAME, "h2").text == heading
            assert 'class="empty"' not in found[0].get_attribute("innerHTML") or section == (
                "broken"
            ), f"the report left section {section} empty"
        if budgets is not None:
            rows = browser.find_element(By.ID, "config").find_elements(By.CSS_SELECTOR, "table tr")
            # each budget beside the paper's
            assert len(rows) == 1 + budgets and "247 objects" in rows[3].text
        # the page opens on the verdicts against the papers, then what is broken
        sections = browser.find_elements(By.TAG_NAME, "section")
        if verdicts:
            rows = sections[0].find_elements(By.CSS_SELECTOR, "table tr")[1:]
            assert sections[0].get_attribute("id") == "verdicts" and len(rows) == verdicts
            column = [th.text for th in sections[0].find_elements(By.TAG_NAME, "th")].index(
                "verdict"
            )
            assert all(
                row.find_elements(By.TAG_NAME, "td")[column].text in VERDICTS for row in rows
            )
            sections = sections[1:]
        broken = sections[0]
        assert broken.get_attribute("id") == "broken"
        # the distinct bugs per game and kind, then the groups, the most severe open
        counts = broken.find_elements(By.CSS_SELECTOR, "table")[0]
        assert counts.find_elements(By.TAG_NAME, "th")[0].text == "game"
        groups = broken.find_elements(By.CSS_SELECTOR, "details.bugs")
        assert groups and groups[0].get_attribute("open") is not None
        rows = [
            row
            for group in groups
            for row in group.find_elements(By.CSS_SELECTOR, "table tr")
            if not row.find_elements(By.TAG_NAME, "th")
        ]
        views = broken.find_elements(By.TAG_NAME, "img")
        # a view for every distinct bug, each bug with its replay command
        assert rows and all("jgtest replay " in row.get_attribute("textContent") for row in rows)
        assert len(views) == len(rows)
        images = browser.find_elements(By.TAG_NAME, "img")
        # all decode
        assert len(images) >= min_images and all(
            browser.execute_script("return arguments[0].naturalWidth", img) > 0 for img in images
        )
        assert browser.save_screenshot(str(screenshot)) and screenshot.stat().st_size > 10_000
    finally:
        browser.quit()
