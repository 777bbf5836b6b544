# Sourced by scripts/test.sh: the dashboard's browser test (executor-admin,
# tests/it/dashboard_browser.rs) drives Debian's headless Chromium through
# chromedriver. Installs both when missing and tells the test where they are.
if ! command -v chromedriver >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1; then
    echo "installing chromium and chromium-driver"
    apt_install chromium chromium-driver
fi
export CHROMEDRIVER="${CHROMEDRIVER:-$(command -v chromedriver)}"
export CHROMIUM="${CHROMIUM:-$(command -v chromium)}"
