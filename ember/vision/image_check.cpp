// Structure checks of image files before stb_image decodes them: stb accepts some truncated
// files silently (a JPEG cut mid-scan decodes with grey blocks) and reports others tersely, so
// each format's framing is walked here first and every problem names the byte where it is.
#include <zlib.h>

#include <cstring>
#include <string>

#include "ember/vision/image.h"

namespace ember::vision {
namespace {

[[noreturn]] void bad(ImageFormat f, const std::string& msg) {
  throw ImageError(std::string("[decode_image] ") + format_name(f) + ": " + msg);
}
uint32_t be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
uint32_t be16(const uint8_t* p) { return uint32_t(p[0]) << 8 | p[1]; }
uint32_t le16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
uint32_t le32(const uint8_t* p) { return le16(p) | le16(p + 2) << 16; }
std::string hex(unsigned v) {
  const char* d = "0123456789ABCDEF";
  return std::string("0x") + d[(v >> 4) & 15] + d[v & 15];
}
std::string at(size_t pos) { return " at byte " + std::to_string(pos); }
std::string ends(size_t n) {
  return ", but the file ends at byte " + std::to_string(n) + " (truncated)";
}

ImageInfo check_png(std::span<const uint8_t> b) {
  const auto F = ImageFormat::Png;
  ImageInfo info{F};
  size_t pos = 8;
  bool seen_idat = false, palette = false, trns = false;
  int color_type = -1;
  for (int index = 0;; ++index) {
    if (pos + 12 > b.size()) bad(F, "a chunk header is expected" + at(pos) + ends(b.size()));
    const uint32_t len = be32(&b[pos]);
    const std::string type(reinterpret_cast<const char*>(&b[pos + 4]), 4);
    if (len > 0x7fffffffu)
      bad(F,
          "chunk '" + type + "'" + at(pos) + " has length " + std::to_string(len) + " (corrupt)");
    if (pos + 12 + uint64_t(len) > b.size())
      bad(F, "chunk '" + type + "'" + at(pos) + " needs " + std::to_string(len + 12) + " bytes" +
                 ends(b.size()));
    const uint32_t crc = uint32_t(crc32(crc32(0, nullptr, 0), &b[pos + 4], len + 4));
    if (crc != be32(&b[pos + 8 + len]))
      bad(F, "chunk '" + type + "'" + at(pos) + " fails its CRC check (corrupt)");
    const uint8_t* d = &b[pos + 8];
    if (index == 0) {
      if (type != "IHDR" || len != 13)
        bad(F, "the first chunk must be a 13-byte IHDR, found '" + type + "'");
      info.width = be32(d), info.height = be32(d + 4);
      const int depth = d[8];
      color_type = d[9];
      if (info.width == 0 || info.height == 0) bad(F, "IHDR gives an empty image");
      const bool ok_depth = depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16;
      if (!ok_depth || (color_type != 0 && color_type != 2 && color_type != 3 && color_type != 4 &&
                        color_type != 6))
        bad(F, "IHDR gives bit depth " + std::to_string(depth) + " and colour type " +
                   std::to_string(color_type) + " (corrupt)");
      palette = color_type == 3;
    } else if (type == "IDAT") {
      seen_idat = true;
    } else if (type == "tRNS") {
      trns = true;
    } else if (type == "IEND") {
      if (!seen_idat) bad(F, "no IDAT chunk before IEND");
      break;
    }
    pos += 12 + len;
  }
  info.channels = color_type == 0 ? 1 : color_type == 4 ? 2 : color_type == 6 ? 4 : 3;
  if (palette && trns) info.channels = 4;  // stb_image expands such a palette to RGBA
  return info;
}

// Huffman tables: each holds at most 256 codes (stb_image 2.27 writes past its tables when a
// table claims more) and must fit in its segment. Sets bit `id` of `dc` or `ac` for each table.
void check_jpeg_dht(std::span<const uint8_t> b, size_t p, size_t end, unsigned& dc, unsigned& ac) {
  const auto F = ImageFormat::Jpeg;
  while (p < end) {
    if (p + 17 > end) bad(F, "a Huffman table" + at(p) + " is cut short by its segment (corrupt)");
    if ((b[p] >> 4) > 1 || (b[p] & 15) > 3)
      bad(F, "Huffman table" + at(p) + " has class/id " + hex(b[p]) + " (corrupt)");
    size_t n = 0;
    for (int i = 1; i <= 16; ++i) n += b[p + size_t(i)];
    if (n > 256 || p + 17 + n > end)
      bad(F, "Huffman table" + at(p) + " claims " + std::to_string(n) +
                 " codes (at most 256, within its segment; corrupt)");
    ((b[p] >> 4) ? ac : dc) |= 1u << (b[p] & 15);
    p += 17 + n;
  }
}

// A scan's components use Huffman tables defined before it (stb_image 2.27 decodes with an
// uninitialised table otherwise and indexes past it: found by fuzz_image): both tables in a
// sequential scan; in a progressive one, the DC table in a first DC scan and the AC table in an
// AC scan. The frame's components name quantisation tables defined before the scan.
void check_jpeg_scan(std::span<const uint8_t> b, size_t pos, uint32_t len, bool progressive,
                     unsigned dc, unsigned ac, unsigned dq, unsigned frame_dq) {
  const auto F = ImageFormat::Jpeg;
  const size_t ns = len >= 3 ? b[pos + 4] : 0;
  if (ns < 1 || ns > 4 || len < 6 + 2 * ns)
    bad(F, "scan header" + at(pos) + " gives " + std::to_string(ns) + " components in " +
               std::to_string(len) + " bytes (corrupt)");
  if ((frame_dq & ~dq) != 0)
    bad(F,
        "the frame uses a quantisation table not defined before the scan" + at(pos) + " (corrupt)");
  const size_t tail = pos + 5 + 2 * ns;
  const unsigned ss = b[tail], ah = b[tail + 2] >> 4;
  for (size_t i = 0; i < ns; ++i) {
    const unsigned td = b[pos + 6 + 2 * i] >> 4, ta = b[pos + 6 + 2 * i] & 15;
    if (td > 3 || ta > 3)
      bad(F, "scan" + at(pos) + " names Huffman tables " + std::to_string(td) + "/" +
                 std::to_string(ta) + " (at most 3; corrupt)");
    const bool need_dc = progressive ? (ss == 0 && ah == 0) : true;
    const bool need_ac = progressive ? ss > 0 : true;
    if ((need_dc && !(dc >> td & 1)) || (need_ac && !(ac >> ta & 1)))
      bad(F, "scan" + at(pos) + " uses a Huffman table not defined before it (corrupt)");
  }
}

ImageInfo check_jpeg(std::span<const uint8_t> b) {
  const auto F = ImageFormat::Jpeg;
  ImageInfo info{F};
  size_t pos = 2;
  bool sof = false, progressive = false;
  unsigned dc = 0, ac = 0, dq = 0, frame_dq = 0;
  size_t coded = 0;  // entropy-coded bytes of all scans
  for (;;) {
    if (pos + 2 > b.size()) bad(F, "a marker is expected" + at(pos) + ends(b.size()));
    if (b[pos] != 0xFF)
      bad(F, "a marker (0xFF) is expected" + at(pos) + ", found " + hex(b[pos]) + " (corrupt)");
    uint8_t m = b[pos + 1];
    if (m == 0xFF) {
      ++pos;
      continue;
    }  // fill byte
    if (m == 0xD8 || (m >= 0xD0 && m <= 0xD7) || m == 0x01) {
      pos += 2;
      continue;
    }
    if (m == 0xD9) bad(F, "end of image" + at(pos) + " before any scan");
    if (pos + 4 > b.size()) bad(F, "a segment length is expected" + at(pos + 2) + ends(b.size()));
    const uint32_t len = be16(&b[pos + 2]);
    if (len < 2) bad(F, "segment" + at(pos) + " has length " + std::to_string(len) + " (corrupt)");
    if (pos + 2 + len > b.size())
      bad(F, "segment 0xFF" + hex(m).substr(2) + at(pos) + " needs " + std::to_string(len + 2) +
                 " bytes" + ends(b.size()));
    const bool is_sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
    if (is_sof) {
      // One frame: stb_image decodes the first frame header's size, so a second one (which
      // could claim a small size for a huge first frame) is refused (found by fuzz_image).
      if (sof) bad(F, "a second frame header" + at(pos) + " (one frame per file is supported)");
      if (len < 8) bad(F, "frame header" + at(pos) + " is too short (corrupt)");
      info.height = be16(&b[pos + 5]), info.width = be16(&b[pos + 7]);
      info.channels = b[pos + 9];
      if (info.width == 0 || info.height == 0) bad(F, "the frame header gives an empty image");
      if (info.channels != 1 && info.channels != 3 && info.channels != 4)
        bad(F, "the frame header gives " + std::to_string(info.channels) +
                   " components (expected 1, 3 or 4)");
      if (len < 8 + 3 * uint32_t(info.channels))
        bad(F, "frame header" + at(pos) + " is too short for its components (corrupt)");
      frame_dq = 0;
      for (size_t i = 0; i < b[pos + 9]; ++i) frame_dq |= 1u << (b[pos + 12 + 3 * i] & 15);
      if (info.channels == 4) info.channels = 3;  // CMYK / YCCK decode to RGB
      progressive = m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE;
      sof = true;
    }
    if (m == 0xC4) check_jpeg_dht(b, pos + 4, pos + 2 + len, dc, ac);
    if (m == 0xDB)  // quantisation tables: a precision/id byte, then 64 or 128 bytes each
      for (size_t q = pos + 4; q < pos + 2 + len; q += 1 + ((b[q] >> 4) ? 128 : 64))
        dq |= 1u << (b[q] & 15);
    if (m == 0xDA) {  // start of scan: entropy-coded data up to the next marker
      if (!sof) bad(F, "a scan" + at(pos) + " comes before any frame header (corrupt)");
      check_jpeg_scan(b, pos, len, progressive, dc, ac, dq, frame_dq);
      const size_t data = pos + 2 + len;
      size_t k = data;
      for (;; ++k) {
        if (k + 1 >= b.size())
          bad(F, "no end-of-image marker (FFD9) after the scan data" + at(data) +
                     "; the file is truncated at byte " + std::to_string(b.size()));
        const uint8_t next = b[k + 1];
        if (b[k] == 0xFF && next != 0 && next != 0xFF && !(next >= 0xD0 && next <= 0xD7)) break;
      }
      coded += k - data;
      if (b[k + 1] == 0xD9) {
        // Every 8x8 block of the full-resolution component codes at least its DC coefficient,
        // one bit at the least: a frame larger than its data can hold is refused before any
        // allocation (a 1 KB file claiming 20000x30000 pixels).
        const uint64_t blocks = uint64_t((info.width + 7) / 8) * uint64_t((info.height + 7) / 8);
        if (uint64_t(coded) * 8 < blocks)
          bad(F, "the scans hold " + std::to_string(coded) + " bytes of coded data, fewer than the " +
                     std::to_string(blocks) + " blocks of a " + std::to_string(info.width) + "x" +
                     std::to_string(info.height) + " frame need (one bit each at the least; corrupt)");
        return info;
      }
      pos = k;  // more segments (a progressive file's tables and scans), walked like the first
      continue;
    }
    pos += 2 + len;
  }
}

ImageInfo check_bmp(std::span<const uint8_t> b) {
  const auto F = ImageFormat::Bmp;
  ImageInfo info{F};
  if (b.size() < 26) bad(F, "the headers need at least 26 bytes" + ends(b.size()));
  const uint32_t off = le32(&b[10]), dib = le32(&b[14]);
  if (dib != 12 && dib != 40 && dib != 52 && dib != 56 && dib != 108 && dib != 124)
    bad(F, "unknown info header size " + std::to_string(dib) + " (corrupt)");
  if (14 + uint64_t(dib) > b.size())
    bad(F, "the info header needs " + std::to_string(14 + dib) + " bytes" + ends(b.size()));
  int64_t w, h;
  uint32_t bpp, compression = 0;
  if (dib == 12) {
    w = le16(&b[18]), h = int16_t(le16(&b[20])), bpp = le16(&b[24]);
  } else {
    w = int32_t(le32(&b[18])), h = int32_t(le32(&b[22])), bpp = le16(&b[28]);
    compression = le32(&b[30]);
  }
  if (h < 0) h = -h;
  if (w <= 0 || h == 0)
    bad(F, "the info header gives a " + std::to_string(w) + "x" + std::to_string(h) + " image");
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32)
    bad(F, "unsupported bits per pixel " + std::to_string(bpp));
  if (compression != 0 && compression != 3)
    bad(F, "compression method " + std::to_string(compression) +
               " is not supported (RLE); expected 0 or 3");
  const uint64_t row = (uint64_t(w) * bpp + 31) / 32 * 4, need = uint64_t(off) + row * uint64_t(h);
  if (off < 14 + dib || need > b.size())
    bad(F, "pixel data at byte " + std::to_string(off) + " needs " +
               std::to_string(row * uint64_t(h)) + " bytes" + ends(b.size()));
  info.width = w, info.height = h;
  info.channels = bpp == 32 ? 4 : 3;
  return info;
}

/// Skips GIF data sub-blocks from `pos`; returns the position after the terminator.
size_t skip_sub_blocks(std::span<const uint8_t> b, size_t pos) {
  for (;;) {
    if (pos >= b.size())
      bad(ImageFormat::Gif, "a data sub-block is expected" + at(pos) + ends(b.size()));
    const size_t n = b[pos];
    if (n == 0) return pos + 1;
    pos += 1 + n;
  }
}

ImageInfo check_gif(std::span<const uint8_t> b) {
  const auto F = ImageFormat::Gif;
  ImageInfo info{F};
  if (b.size() < 13) bad(F, "the screen descriptor needs 13 bytes" + ends(b.size()));
  info.width = le16(&b[6]), info.height = le16(&b[8]);
  info.channels = 4;  // stb_image gives every GIF frame as RGBA
  size_t pos = 13;
  if (b[10] & 0x80) pos += 3u << ((b[10] & 7) + 1);
  for (;;) {
    if (pos >= b.size()) bad(F, "a block is expected" + at(pos) + ends(b.size()));
    const uint8_t kind = b[pos];
    if (kind == 0x21) {
      if (pos + 2 > b.size())
        bad(F, "an extension label is expected" + at(pos + 1) + ends(b.size()));
      pos = skip_sub_blocks(b, pos + 2);
    } else if (kind == 0x2C) {
      if (pos + 10 > b.size())
        bad(F, "the image descriptor" + at(pos) + " needs 10 bytes" + ends(b.size()));
      const uint8_t flags = b[pos + 9];
      pos += 10;
      if (flags & 0x80) pos += 3u << ((flags & 7) + 1);
      if (pos >= b.size()) bad(F, "the LZW code size is expected" + at(pos) + ends(b.size()));
      skip_sub_blocks(b, pos + 1);  // the first frame's data is all there
      if (info.width == 0 || info.height == 0) bad(F, "the screen descriptor gives an empty image");
      return info;
    } else if (kind == 0x3B) {
      bad(F, "the file ends" + at(pos) + " before any image");
    } else {
      bad(F, "unknown block " + hex(kind) + at(pos) + " (corrupt)");
    }
  }
}

}  // namespace

const char* format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::Png:
      return "PNG";
    case ImageFormat::Jpeg:
      return "JPEG";
    case ImageFormat::Bmp:
      return "BMP";
    case ImageFormat::Gif:
      return "GIF";
  }
  return "?";
}

std::optional<ImageFormat> sniff_format(std::span<const uint8_t> b) {
  static const uint8_t png[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (b.size() >= 8 && std::memcmp(b.data(), png, 8) == 0) return ImageFormat::Png;
  if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return ImageFormat::Jpeg;
  if (b.size() >= 2 && b[0] == 'B' && b[1] == 'M') return ImageFormat::Bmp;
  if (b.size() >= 6 &&
      (std::memcmp(b.data(), "GIF87a", 6) == 0 || std::memcmp(b.data(), "GIF89a", 6) == 0))
    return ImageFormat::Gif;
  return std::nullopt;
}

ImageInfo image_info(std::span<const uint8_t> bytes) {
  auto f = sniff_format(bytes);
  if (!f) {
    if (bytes.empty()) throw ImageError("[decode_image] expected an image, found an empty buffer");
    throw ImageError(
        "[decode_image] expected a PNG, JPEG, BMP or GIF signature, found none in the first " +
        std::to_string(std::min<size_t>(bytes.size(), 8)) + " bytes");
  }
  switch (*f) {
    case ImageFormat::Png:
      return check_png(bytes);
    case ImageFormat::Jpeg:
      return check_jpeg(bytes);
    case ImageFormat::Bmp:
      return check_bmp(bytes);
    case ImageFormat::Gif:
      return check_gif(bytes);
  }
  return {};
}

}  // namespace ember::vision
