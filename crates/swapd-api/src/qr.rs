//! QR images of payment URIs: PNG (greyscale, 8 px modules, the standard 4-module quiet zone)
//! and SVG, as `data:` URIs.

use base64::Engine;
use qrcode::{Color, EcLevel, QrCode};

const MODULE_PX: usize = 8;
const QUIET_ZONE: usize = 4;

/// The QR code of `payload` as a PNG and an SVG `data:` URI. `None` when the payload is too long
/// for a QR code.
pub fn images(payload: &str) -> Option<(String, String)> {
    let code = QrCode::with_error_correction_level(payload.as_bytes(), EcLevel::M).ok()?;
    let png = png_bytes(&code)?;
    let svg = code
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(256, 256)
        .build();
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    Some((
        format!("data:image/png;base64,{}", b64(&png)),
        format!("data:image/svg+xml;base64,{}", b64(svg.as_bytes())),
    ))
}

fn png_bytes(code: &QrCode) -> Option<Vec<u8>> {
    let modules = code.width();
    let colors = code.to_colors();
    let side = (modules + 2 * QUIET_ZONE) * MODULE_PX;
    let mut pixels = vec![255u8; side * side];
    for (index, color) in colors.iter().enumerate() {
        if *color != Color::Dark {
            continue;
        }
        let (mx, my) = (index % modules + QUIET_ZONE, index / modules + QUIET_ZONE);
        for y in my * MODULE_PX..(my + 1) * MODULE_PX {
            pixels[y * side + mx * MODULE_PX..y * side + (mx + 1) * MODULE_PX].fill(0);
        }
    }
    let side = u32::try_from(side).ok()?;
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, side, side);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().ok()?;
    writer.write_image_data(&pixels).ok()?;
    writer.finish().ok()?;
    Some(out)
}
