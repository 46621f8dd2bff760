#!/usr/bin/env bash
# Regenerate docs/picture.png, the README's picture: the dashboard during the link-brownout drill
# at 15 simulated minutes, rendered headless by `prfaas-tui snapshot` (deterministic), then
# SVG -> PNG with rsvg-convert (Debian: librsvg2-bin) or cairosvg (pip), and made small with
# pngquant when it is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python -m prfaas_tui.cli snapshot --drill link-brownout --at 900 --size 160x48 --out "$tmp/p.svg"
if command -v rsvg-convert >/dev/null; then
  rsvg-convert -w 1100 "$tmp/p.svg" -o "$tmp/p.png"
elif python -c "import cairosvg" 2>/dev/null; then
  python -c "import cairosvg, sys; cairosvg.svg2png(url=sys.argv[1], write_to=sys.argv[2], output_width=1100)" \
    "$tmp/p.svg" "$tmp/p.png"
else
  echo "render_picture: needs rsvg-convert (apt-get install librsvg2-bin) or cairosvg (pip install cairosvg)" >&2
  exit 2
fi
if command -v pngquant >/dev/null; then
  pngquant --quality 60-85 --speed 1 --force --output docs/picture.png "$tmp/p.png"
else
  cp "$tmp/p.png" docs/picture.png
fi
echo "wrote docs/picture.png ($(wc -c < docs/picture.png) bytes)"
