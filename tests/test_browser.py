"""The real browser the dashboard's tests drive: Debian's chromium, through playwright pointed at it.
Fails, saying `apt-get install chromium`, on a machine without it."""

from __future__ import annotations

from playwright.sync_api import sync_playwright
from real_browser import INSTALL_HINT, chromium_or_fail


def test_chromium_is_installed_and_playwright_drives_it() -> None:
    executable = chromium_or_fail()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(executable))
        try:
            page = browser.new_page()
            page.set_content("<p id=answer></p><script>document.getElementById('answer').textContent = 6 * 7</script>")
            assert page.text_content("#answer") == "42", f"chromium at {executable} runs no scripts ({INSTALL_HINT})"
        finally:
            browser.close()
