//! A PDF backend for plotters: one page the figure's size (a pixel is a point), its lines,
//! shapes and text as vector operators, and its text set in the DejaVu Sans the PNGs use,
//! embedded as a Type 0 font (Identity-H: any character the font has, by glyph id) with a
//! ToUnicode map, so the words can be searched and copied. Streams are deflated.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ab_glyph::{Font, FontRef, GlyphId};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind, FontTransform,
};

/// The error a PDF page can give: none is expected, writing goes to memory.
type Error = DrawingErrorKind<std::io::Error>;

/// A one-page PDF drawn in memory; [`DrawingBackend::present`] writes the file's bytes to `out`.
pub(crate) struct PdfBackend<'a> {
    out: &'a mut Vec<u8>,
    size: (u32, u32),
    content: String,
    /// The glyphs the page shows, with the character each stands for.
    glyphs: BTreeMap<u16, char>,
    font: FontRef<'static>,
    ttf: &'static [u8],
}

impl<'a> PdfBackend<'a> {
    /// A page `size` points large whose text is set in `ttf` (a TrueType font), written to `out`.
    pub(crate) fn new(out: &'a mut Vec<u8>, size: (u32, u32), ttf: &'static [u8]) -> std::io::Result<Self> {
        let font = FontRef::try_from_slice(ttf).map_err(|e| std::io::Error::other(e.to_string()))?;
        // Round caps and joins, as the other backends draw lines.
        Ok(PdfBackend { out, size, content: "1 J 1 j\n".into(), glyphs: BTreeMap::new(), font, ttf })
    }

    /// A screen y (down from the top) as a PDF y (up from the bottom).
    fn y(&self, y: f64) -> f64 {
        self.size.1 as f64 - y
    }

    /// A colour's components on white (PDF without transparency groups: an alpha is mixed in).
    fn rgb(c: BackendColor) -> (f64, f64, f64) {
        let a = c.alpha.clamp(0.0, 1.0);
        let mix = |v: u8| a * v as f64 / 255.0 + (1.0 - a);
        (mix(c.rgb.0), mix(c.rgb.1), mix(c.rgb.2))
    }

    fn stroke(&mut self, style: &impl BackendStyle) {
        let (r, g, b) = Self::rgb(style.color());
        let _ = writeln!(self.content, "{r:.3} {g:.3} {b:.3} RG {} w", style.stroke_width().max(1));
    }

    fn fill(&mut self, color: BackendColor) {
        let (r, g, b) = Self::rgb(color);
        let _ = writeln!(self.content, "{r:.3} {g:.3} {b:.3} rg");
    }

    /// Append a path through `points` (screen coordinates): `m`, then `l` to each.
    fn path(&mut self, points: impl IntoIterator<Item = (f64, f64)>) {
        for (i, (x, y)) in points.into_iter().enumerate() {
            let op = if i == 0 { "m" } else { "l" };
            let _ = writeln!(self.content, "{x:.2} {:.2} {op}", self.y(y));
        }
    }

    /// The font's size in PDF units (one em) for a plotters size (the pixel height from
    /// ascender to descender, as ab_glyph scales).
    fn em(&self, px: f64) -> f64 {
        let f = &self.font;
        px * f.units_per_em().unwrap_or(1000.0) as f64 / (f.ascent_unscaled() - f.descent_unscaled()) as f64
    }

    /// The assembled file.
    fn document(&self) -> std::io::Result<Vec<u8>> {
        let f = &self.font;
        let upem = f.units_per_em().unwrap_or(1000.0) as f64;
        let thousandths = |v: f32| (v as f64 * 1000.0 / upem).round() as i64;
        let (w, h) = self.size;
        let mut widths = String::new();
        for &g in self.glyphs.keys() {
            let _ = write!(widths, "{g} [{}] ", thousandths(f.h_advance_unscaled(GlyphId(g))));
        }
        let mut cmap = String::from(
            "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n/CIDSystemInfo << /Registry (Adobe) \
             /Ordering (UCS) /Supplement 0 >> def\n/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n1 \
             begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n",
        );
        let pairs: Vec<(&u16, &char)> = self.glyphs.iter().collect();
        for chunk in pairs.chunks(100) {
            let _ = writeln!(cmap, "{} beginbfchar", chunk.len());
            for (g, c) in chunk {
                let mut units = [0u16; 2];
                let hex: String = c.encode_utf16(&mut units).iter().map(|u| format!("{u:04X}")).collect();
                let _ = writeln!(cmap, "<{g:04X}> <{hex}>");
            }
            cmap.push_str("endbfchar\n");
        }
        cmap.push_str("endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n");
        let (ascent, descent) = (thousandths(f.ascent_unscaled()), thousandths(f.descent_unscaled()));
        let objects: Vec<Vec<u8>> = vec![
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w} {h}] /Resources << /Font << /F1 5 0 R >> >> \
                 /Contents 4 0 R >>"
            )
            .into_bytes(),
            stream("", &deflate(self.content.as_bytes())?, true),
            b"<< /Type /Font /Subtype /Type0 /BaseFont /DejaVuSans /Encoding /Identity-H /DescendantFonts [6 0 R] \
               /ToUnicode 9 0 R >>"
                .to_vec(),
            format!(
                "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /DejaVuSans /CIDSystemInfo << /Registry (Adobe) \
                 /Ordering (Identity) /Supplement 0 >> /FontDescriptor 7 0 R /CIDToGIDMap /Identity /DW 1000 /W \
                 [{widths}] >>"
            )
            .into_bytes(),
            format!(
                "<< /Type /FontDescriptor /FontName /DejaVuSans /Flags 32 /FontBBox [-1021 {descent} 1681 {ascent}] \
                 /ItalicAngle 0 /Ascent {ascent} /Descent {descent} /CapHeight {ascent} /StemV 80 /FontFile2 8 0 R >>"
            )
            .into_bytes(),
            stream(&format!("/Length1 {}", self.ttf.len()), &deflate(self.ttf)?, true),
            stream("", cmap.as_bytes(), false),
        ];
        let mut pdf = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
        let mut offsets = Vec::with_capacity(objects.len());
        for (i, body) in objects.iter().enumerate() {
            offsets.push(pdf.len());
            pdf.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
            pdf.extend_from_slice(body);
            pdf.extend_from_slice(b"\nendobj\n");
        }
        let xref = pdf.len();
        let mut tail = format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1);
        for o in offsets {
            let _ = writeln!(tail, "{o:010} 00000 n ");
        }
        let _ = write!(tail, "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1);
        pdf.extend_from_slice(tail.as_bytes());
        Ok(pdf)
    }
}

/// A stream object: its dictionary (`extra` entries beside `/Length`, and `/Filter` when
/// `deflated`) and its bytes.
fn stream(extra: &str, data: &[u8], deflated: bool) -> Vec<u8> {
    let filter = if deflated { " /Filter /FlateDecode" } else { "" };
    let mut s = format!("<< /Length {}{filter} {extra} >>\nstream\n", data.len()).into_bytes();
    s.extend_from_slice(data);
    s.extend_from_slice(b"\nendstream");
    s
}

fn deflate(data: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(data)?;
    z.finish()
}

/// Where a unit step along the text (`(1, 0)`) and up its glyphs (`(0, -1)`) point on the
/// screen under `t`, as plotters turns text.
fn turned(t: &FontTransform, x: f64, y: f64) -> (f64, f64) {
    match t {
        FontTransform::Rotate90 => (-y, x),
        FontTransform::Rotate180 => (-x, -y),
        FontTransform::Rotate270 => (y, -x),
        _ => (x, y),
    }
}

impl DrawingBackend for PdfBackend<'_> {
    type ErrorType = std::io::Error;

    fn get_size(&self) -> (u32, u32) {
        self.size
    }

    fn ensure_prepared(&mut self) -> Result<(), Error> {
        Ok(())
    }

    fn present(&mut self) -> Result<(), Error> {
        let pdf = self.document().map_err(DrawingErrorKind::DrawingError)?;
        *self.out = pdf;
        Ok(())
    }

    fn draw_pixel(&mut self, p: BackendCoord, color: BackendColor) -> Result<(), Error> {
        if color.alpha > 0.0 {
            self.fill(color);
            let _ = writeln!(self.content, "{} {} 1 1 re f", p.0, self.y(p.1 as f64 + 1.0));
        }
        Ok(())
    }

    fn draw_line<S: BackendStyle>(&mut self, from: BackendCoord, to: BackendCoord, style: &S) -> Result<(), Error> {
        if style.color().alpha > 0.0 {
            self.stroke(style);
            self.path([(from.0 as f64, from.1 as f64), (to.0 as f64, to.1 as f64)]);
            self.content.push_str("S\n");
        }
        Ok(())
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        ul: BackendCoord,
        br: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), Error> {
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        let (x, w, h) = (ul.0 as f64, (br.0 - ul.0) as f64, (br.1 - ul.1) as f64);
        let y = self.y(br.1 as f64);
        if fill {
            self.fill(style.color());
            let _ = writeln!(self.content, "{x:.2} {y:.2} {w:.2} {h:.2} re f");
        } else {
            self.stroke(style);
            let _ = writeln!(self.content, "{x:.2} {y:.2} {w:.2} {h:.2} re S");
        }
        Ok(())
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), Error> {
        if style.color().alpha > 0.0 {
            self.stroke(style);
            self.path(path.into_iter().map(|(x, y)| (x as f64, y as f64)));
            self.content.push_str("S\n");
        }
        Ok(())
    }

    fn draw_circle<S: BackendStyle>(&mut self, c: BackendCoord, r: u32, style: &S, fill: bool) -> Result<(), Error> {
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        // Four cubic Béziers, k = 4/3 (√2 − 1) of the radius from each end.
        let (cx, cy, r) = (c.0 as f64, self.y(c.1 as f64), r as f64);
        let k = 0.552_284_749_8 * r;
        let mut p = format!("{:.2} {cy:.2} m\n", cx + r);
        for (x1, y1, x2, y2, x3, y3) in [
            (cx + r, cy + k, cx + k, cy + r, cx, cy + r),
            (cx - k, cy + r, cx - r, cy + k, cx - r, cy),
            (cx - r, cy - k, cx - k, cy - r, cx, cy - r),
            (cx + k, cy - r, cx + r, cy - k, cx + r, cy),
        ] {
            let _ = writeln!(p, "{x1:.2} {y1:.2} {x2:.2} {y2:.2} {x3:.2} {y3:.2} c");
        }
        if fill {
            self.fill(style.color());
            p.push_str("f\n");
        } else {
            self.stroke(style);
            p.push_str("S\n");
        }
        self.content.push_str(&p);
        Ok(())
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), Error> {
        if style.color().alpha > 0.0 {
            self.fill(style.color());
            self.path(vert.into_iter().map(|(x, y)| (x as f64, y as f64)));
            self.content.push_str("h f\n");
        }
        Ok(())
    }

    fn draw_text<T: BackendTextStyle>(&mut self, text: &str, style: &T, pos: BackendCoord) -> Result<(), Error> {
        let color = style.color();
        if color.alpha == 0.0 || text.is_empty() {
            return Ok(());
        }
        let em = self.em(style.size());
        let upem = self.font.units_per_em().unwrap_or(1000.0) as f64;
        let scale = em / upem;
        let mut hex = String::with_capacity(4 * text.len());
        let mut width = 0.0;
        for ch in text.chars() {
            let g = self.font.glyph_id(ch);
            width += self.font.h_advance_unscaled(g) as f64 * scale;
            self.glyphs.entry(g.0).or_insert(ch);
            let _ = write!(hex, "{:04X}", g.0);
        }
        let ascent = self.font.ascent_unscaled() as f64 * scale;
        let descent = -self.font.descent_unscaled() as f64 * scale;
        // The baseline's start relative to the anchor, along the text and down its glyphs.
        let along = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Center => -width / 2.0,
            HPos::Right => -width,
        };
        let down = match style.anchor().v_pos {
            VPos::Top => ascent,
            VPos::Center => (ascent - descent) / 2.0,
            VPos::Bottom => -descent,
        };
        let t = style.transform();
        let (ax, ay) = turned(&t, 1.0, 0.0);
        let (ux, uy) = turned(&t, 0.0, -1.0);
        let sx = pos.0 as f64 + along * ax - down * ux;
        let sy = pos.1 as f64 + along * ay - down * uy;
        self.fill(color);
        // The text matrix: along and up, in PDF's y-up coordinates.
        let _ = writeln!(
            self.content,
            "BT /F1 {em:.3} Tf {ax:.4} {:.4} {ux:.4} {:.4} {sx:.2} {:.2} Tm <{hex}> Tj ET",
            -ay,
            -uy,
            self.y(sy)
        );
        Ok(())
    }
}
