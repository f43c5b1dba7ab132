//! The page's files, compiled into the binary from web/ so that `netto
//! serve` needs nothing from the working directory (or the network) at run
//! time; `include_bytes!` also makes cargo rebuild when one changes.

pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

macro_rules! web_file {
    ($name:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/web/", $name))
    };
}

pub const ASSETS: [Asset; 3] = [
    Asset {
        path: "/",
        content_type: "text/html; charset=utf-8",
        body: web_file!("index.html"),
    },
    Asset {
        path: "/app.js",
        content_type: "text/javascript; charset=utf-8",
        body: web_file!("app.js"),
    },
    Asset {
        path: "/style.css",
        content_type: "text/css; charset=utf-8",
        body: web_file!("style.css"),
    },
];
