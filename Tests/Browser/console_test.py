"""The mock's console in a real browser (headless Chromium through chromedriver and Selenium):
what a person does with it, checked on the page, with pushes sent by a third-party client (curl,
with the mock's client certificate). Run by Scripts/console-browser-test.sh, which starts the mock.

    python3 console_test.py CONSOLE-URL APNS-HOST:PORT FOLDER SCREENSHOT

FOLDER holds the mock's ca.pem, client.pem and client-key.pem; SCREENSHOT is where the picture
of the console showing the composed alert goes (the one in Sources/APNs.docc/Resources).
"""

import subprocess
import sys

from selenium import webdriver
from selenium.common.exceptions import ElementNotInteractableException, StaleElementReferenceException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

console, apns, folder, screenshot = sys.argv[1:5]


def push(token, body, push_type="alert"):
    """One push as a client in another language sends it; returns the HTTP status."""
    answer = subprocess.run(
        ["curl", "-s", "--http2", "--cert", f"{folder}/client.pem", "--key", f"{folder}/client-key.pem",
         "--cacert", f"{folder}/ca.pem", "-H", "apns-topic: com.example.app", "-H", f"apns-push-type: {push_type}",
         "-H", "apns-priority: 10", "-o", "/dev/null", "-w", "%{http_code}", "-d", body,
         f"https://{apns}/3/device/{token}"],
        capture_output=True, text=True, check=True)
    return int(answer.stdout)


options = Options()
for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1200"]:
    options.add_argument(argument)
options.binary_location = "/usr/bin/chromium"
browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
wait = WebDriverWait(browser, 15)
try:
    browser.get(console + "/")
    wait.until(EC.text_to_be_present_in_element((By.ID, "status"), "0 received"))

    # The composer offers what each push type takes, from the library's rules.
    def offered(select_id):
        return [option.get_attribute("value") for option in Select(browser.find_element(By.ID, select_id)).options]

    def choose(push_type):
        Select(browser.find_element(By.ID, "compose-type")).select_by_value(push_type)

    wait.until(lambda _: "alert" in offered("compose-type"))
    choose("mdm")
    assert offered("compose-connector") == ["certificate"], offered("compose-connector")
    assert browser.find_element(By.ID, "compose-app-label").text == "MDM topic"
    choose("widgets")
    assert offered("compose-connector") == ["token"] and offered("compose-priority") == ["10", "5"]
    assert not browser.find_elements(By.ID, "field-alert-title"), "widgets take no alert"
    choose("background")
    assert offered("compose-priority") == ["5"], offered("compose-priority")
    choose("liveactivity")
    assert offered("compose-target") == ["device", "channel"], offered("compose-target")
    assert browser.find_elements(By.ID, "field-alert-title") and not browser.find_elements(By.ID, "field-alert-subtitle")
    print("the composer offers each push type's connectors, priorities, targets and fields")

    # A device made on the page becomes the composer's target; a rule broken is shown on its field.
    browser.find_element(By.CSS_SELECTOR, "#device-form button[type=submit]").click()
    wait.until(lambda _: browser.find_element(By.ID, "compose-to").get_attribute("value"))
    choose("fileprovider")
    wait.until(EC.text_to_be_present_in_element((By.ID, "compose-problem"), "container-identifier"))
    wait.until(lambda _: browser.find_element(By.ID, "field-container-identifier").get_attribute("aria-invalid") == "true")
    print("a fileprovider without its container refused, on its field:", browser.find_element(By.ID, "compose-problem").text)

    # An alert with a title and a badge: its exact request and its Swift, sent, shown as a banner.
    choose("alert")
    assert offered("compose-priority") == ["10", "5", "1"] and offered("compose-target") == ["device"]
    browser.find_element(By.ID, "field-alert-title").send_keys("Hello")
    browser.find_element(By.ID, "field-badge").send_keys("1")
    wait.until(EC.text_to_be_present_in_element((By.ID, "compose-request"), '{"aps":{"alert":{"title":"Hello"},"badge":1}}'))
    wait.until(EC.text_to_be_present_in_element((By.ID, "compose-swift"), 'Title("Hello")'))
    assert "Badge(1)" in browser.find_element(By.ID, "compose-swift").text
    assert "apns-push-type: alert" in browser.find_element(By.ID, "compose-request").text
    browser.find_element(By.ID, "compose-send-mock").click()
    wait.until(EC.text_to_be_present_in_element((By.ID, "compose-result"), "Sent to the mock: 200"))
    wait.until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, ".banner .title"), "Hello"))
    assert browser.find_element(By.CSS_SELECTOR, ".banner .badge").text == "1"
    assert "apns-push-type" in browser.find_element(By.ID, "detail").text
    assert "authorization: bearer" in browser.find_element(By.ID, "compose-request").text, "a token connector by default"
    # The whole page in the picture: the composer, its request and Swift, and the banner.
    browser.set_window_size(1400, browser.execute_script("return document.documentElement.scrollHeight") + 40)
    browser.save_screenshot(screenshot)
    browser.set_window_size(1400, 1200)
    print("an alert composed (request and Swift shown), sent, and shown as a banner; screenshot", screenshot)

    # An alert with a title and a badge arrives and is shown as a banner, its request beside it.
    token = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
    assert push(token, '{"aps":{"alert":{"title":"Goal!","subtitle":"Arsenal 2-1","body":"Saka scores in the 89th minute"},"badge":3,"sound":"default"}}') == 200
    wait.until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, ".banner .title"), "Goal!"))
    assert browser.find_element(By.CSS_SELECTOR, ".banner .badge").text == "3"
    assert "accepted" in browser.find_element(By.ID, "rows").text
    assert "apns-push-type" in browser.find_element(By.ID, "detail").text
    print("an alert sent by curl shown as a banner, with its headers and payload")

    # A device made on the page; its app removed; the next push to it is 410, shown as such.
    browser.find_element(By.CSS_SELECTOR, "#device-form button[type=submit]").click()
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#devices tr button")))
    device = browser.find_element(By.CSS_SELECTOR, "#devices tr td").text
    browser.find_element(By.CSS_SELECTOR, "#devices tr button").click()
    wait.until(EC.text_to_be_present_in_element((By.ID, "devices"), "app removed"))
    assert push(device, '{"aps":{"alert":"Still there?"}}') == 410
    wait.until(EC.text_to_be_present_in_element((By.ID, "rows"), "Unregistered"))
    print("a device made, its app removed: the next push answered 410 Unregistered")

    # A fault switched on from the page: the next push is 503; switched off, 200 again.
    Select(browser.find_element(By.CSS_SELECTOR, "#fault-form select")).select_by_value("status:503:30")
    browser.find_element(By.CSS_SELECTOR, "#fault-form button[type=submit]").click()
    wait.until(EC.text_to_be_present_in_element((By.ID, "fault-state"), "On: 503"))
    assert push(token, '{"aps":{"alert":"During the fault"}}') == 503
    wait.until(EC.text_to_be_present_in_element((By.ID, "rows"), "ServiceUnavailable"))
    browser.find_element(By.ID, "fault-off").click()
    wait.until(EC.text_to_be_present_in_element((By.ID, "fault-state"), "No fault"))
    assert push(token, '{"aps":{"alert":"After the fault"}}') == 200
    print("a fault switched on (503 answered, and listed) and off (200 again)")

    # Filters, and the keyboard: a verdict filter leaves the rejected; Enter on a row shows it.
    Select(browser.find_element(By.CSS_SELECTOR, "#filters select[name=verdict]")).select_by_visible_text("rejected")
    # The 410 and the 503 the fault answered.
    wait.until(lambda _: len(browser.find_elements(By.CSS_SELECTOR, "#rows tr")) == 2)
    rows = browser.find_elements(By.CSS_SELECTOR, "#rows tr")
    assert "Unregistered" in rows[0].text and "ServiceUnavailable" in rows[1].text, [row.text for row in rows]
    Select(browser.find_element(By.CSS_SELECTOR, "#filters select[name=verdict]")).select_by_visible_text("faulted")
    wait.until(lambda _: len(browser.find_elements(By.CSS_SELECTOR, "#rows tr")) == 1)
    Select(browser.find_element(By.CSS_SELECTOR, "#filters select[name=verdict]")).select_by_visible_text("rejected")
    wait.until(lambda _: len(browser.find_elements(By.CSS_SELECTOR, "#rows tr")) == 2)
    # The page renders its rows again every second (its poll), so a row found a moment ago may be
    # gone by the time a key reaches it (Chromium says "not interactable", or the element is stale):
    # the first row is found afresh until Enter reaches one.
    def enter_on_first_row(_):
        try:
            browser.find_elements(By.CSS_SELECTOR, "#rows tr")[0].send_keys(Keys.ENTER)
            return True
        except (ElementNotInteractableException, StaleElementReferenceException, IndexError):
            return False

    wait.until(enter_on_first_row)
    wait.until(EC.text_to_be_present_in_element((By.ID, "detail"), "Unregistered"))
    labels = browser.find_elements(By.CSS_SELECTOR, "label")
    assert all(label.find_elements(By.CSS_SELECTOR, "input, select, textarea") for label in labels), "every field labelled"
    print("filtered to the rejected; a row opened with the keyboard; every field labelled")
    print("console in a browser: ok")
finally:
    browser.quit()
