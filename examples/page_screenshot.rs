//! `page_screenshot URL OUT.png [WIDTH]`: the page `netto serve` serves at
//! URL, once it is live and shows a flame graph, as a PNG of the whole page
//! in a window WIDTH pixels wide (the manual's picture: 1400; the narrow
//! layout the first-hour trial looks at: 1000).
//! scripts/pictures.sh takes the manual's picture of the page with it.
//!
//! Chromium's own `--screenshot` cannot: it shoots at the load event,
//! before the page has had a snapshot from its stream, and with
//! `--virtual-time-budget` it waits for the stream, which never ends. So
//! this drives headless Chromium (the Debian package) over the DevTools
//! protocol instead, as the browser tests do.

use std::ffi::OsStr;
use std::process::ExitCode;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use headless_chrome::protocol::cdp::Page::{CaptureScreenshotFormatOption, Viewport};
use headless_chrome::{Browser, LaunchOptions, Tab};

/// What the page shows once it is worth a picture: the stream is open and
/// a flame graph is drawn.
const READY: &str = "document.getElementById('status')?.textContent === 'live' \
                     && document.getElementById('flame') !== null";

/// The picture's width unless told, and the most it may be tall: the
/// window is that tall, and the picture is cut where the page's content ends.
const WIDTH: u32 = 1400;
const MAX_HEIGHT: u32 = 3000;

/// How long the page keeps drawing after it is ready, so that its chart
/// has a few intervals in it.
const SETTLE: Duration = Duration::from_secs(10);

fn wait_until_ready(tab: &Tab) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // Until the page has loaded, there is nothing to evaluate in.
        let ready = tab.evaluate(READY, false).ok().and_then(|r| r.value);
        if ready == Some(serde_json::Value::Bool(true)) {
            return Ok(());
        }
        if Instant::now() > deadline {
            let shown = tab
                .evaluate(
                    "document.getElementById('status')?.textContent + ' / ' \
                     + document.getElementById('flame-box')?.innerHTML.slice(0, 80)",
                    false,
                )?
                .value;
            bail!(
                "the page was not live with a flame graph within 60 s (status / flame: {shown:?})"
            );
        }
        thread::sleep(Duration::from_millis(200));
    }
}

fn shoot(url: &str, out: &str, width: u32) -> Result<()> {
    let profile = tempfile::tempdir().context("a profile directory for chromium")?;
    let browser = Browser::new(LaunchOptions {
        headless: true,
        sandbox: false,
        enable_gpu: false,
        path: Some("/usr/bin/chromium".into()),
        user_data_dir: Some(profile.path().to_owned()),
        window_size: Some((width, MAX_HEIGHT)),
        args: [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ]
        .map(OsStr::new)
        .into(),
        idle_browser_timeout: Duration::from_secs(120),
        ..LaunchOptions::default()
    })
    .context("starting chromium (Debian package chromium)")?;
    let tab = browser.new_tab()?;
    tab.set_default_timeout(Duration::from_secs(60));
    tab.navigate_to(url)?;
    wait_until_ready(&tab)?;
    thread::sleep(SETTLE);
    // The flame graph is redrawn every interval, and the page's height moves
    // while a new one loads: hold it (the page's own pause, without its
    // resume button), let the drawing in flight finish, then measure.
    tab.evaluate("view.flamePaused = true", false)
        .context("pausing the flame graph (web/app.js's view.flamePaused)")?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while tab.evaluate("view.flameLoading", false)?.value != Some(serde_json::Value::Bool(false)) {
        if Instant::now() > deadline {
            bail!("the flame graph was still loading after 30 s");
        }
        thread::sleep(Duration::from_millis(100));
    }
    thread::sleep(Duration::from_millis(500));
    let height = tab
        .evaluate(
            "Math.ceil(Math.max(...Array.from(document.body.children, \
             e => e.getBoundingClientRect().bottom))) + 16",
            false,
        )?
        .value
        .and_then(|v| v.as_f64())
        .context("the page's height")?;
    let clip = Viewport {
        x: 0.0,
        y: 0.0,
        width: f64::from(width),
        height: height.min(f64::from(MAX_HEIGHT)),
        scale: 1.0,
    };
    let png = tab.capture_screenshot(CaptureScreenshotFormatOption::Png, None, Some(clip), true)?;
    std::fs::write(out, png).with_context(|| format!("writing {out}"))?;
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (url, out, width) = match args.as_slice() {
        [url, out] => (url, out, WIDTH),
        [url, out, width] => match width.parse() {
            Ok(width) => (url, out, width),
            Err(_) => {
                eprintln!("page_screenshot: error: WIDTH {width:?} is not a number of pixels");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("usage: page_screenshot URL OUT.png [WIDTH]");
            return ExitCode::from(2);
        }
    };
    match shoot(url, out, width) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("page_screenshot: {e:#}");
            ExitCode::FAILURE
        }
    }
}
