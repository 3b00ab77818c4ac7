package llm

import (
	"bytes"
	"fmt"
	"image"
	_ "image/gif" // decoder: GIF in, its first frame out as PNG
	"image/jpeg"
	"image/png"

	"golang.org/x/image/draw"
	_ "golang.org/x/image/webp" // decoder: providers' UIs hand out WebP screenshots
)

// maxPixels bounds the images Resize decodes: a small file may declare a
// huge canvas (a decompression bomb), and 64 megapixels is beyond any
// camera a user attaches from.
const maxPixels = 64 << 20

// Resize scales an image so that neither side exceeds maxDim, keeping its
// aspect ratio and never upscaling (REQ-BED-013: images sent in the
// provider's format at a configurable size). PNG, JPEG, GIF (its first
// frame) and WebP come in; JPEG goes out as JPEG, everything else as PNG.
// A JPEG or PNG already within maxDim is returned unchanged; maxDim ≤ 0
// only converts.
func Resize(data []byte, maxDim int) (out []byte, mediaType string, w, h int, err error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, "", 0, 0, fmt.Errorf("llm: image: not a PNG, JPEG, GIF or WebP: %v", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, "", 0, 0, fmt.Errorf("llm: image: %s of %dx%d pixels is empty", format, cfg.Width, cfg.Height)
	}
	if int64(cfg.Width)*int64(cfg.Height) > maxPixels {
		return nil, "", 0, 0, fmt.Errorf("llm: image: %s of %dx%d pixels exceeds %d megapixels", format, cfg.Width, cfg.Height, maxPixels>>20)
	}
	// Decoded even when it fits: a corrupt image is refused here, with a
	// reason, rather than by the provider as a bad request.
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", 0, 0, fmt.Errorf("llm: image: decoding %s: %v", format, err)
	}
	w, h = scaled(cfg.Width, cfg.Height, maxDim)
	fits := w == cfg.Width && h == cfg.Height
	switch {
	case fits && format == "jpeg":
		return data, "image/jpeg", w, h, nil
	case fits && format == "png":
		return data, "image/png", w, h, nil
	}
	var img image.Image = src
	if !fits {
		dst := image.NewRGBA(image.Rect(0, 0, w, h))
		// CatmullRom: the sharpest of x/image's scalers, so text in a
		// screenshot stays legible to the model.
		draw.CatmullRom.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Src, nil)
		img = dst
	}
	var buf bytes.Buffer
	if format == "jpeg" {
		err, mediaType = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}), "image/jpeg"
	} else {
		err, mediaType = png.Encode(&buf, img), "image/png"
	}
	if err != nil {
		return nil, "", 0, 0, fmt.Errorf("llm: image: encoding %s: %v", mediaType, err)
	}
	return buf.Bytes(), mediaType, w, h, nil
}

// scaled is w×h shrunk to fit maxDim on its longer side, each side at
// least one pixel; never larger than it was.
func scaled(w, h, maxDim int) (int, int) {
	if maxDim <= 0 || (w <= maxDim && h <= maxDim) {
		return w, h
	}
	if w >= h {
		return maxDim, max(1, int((int64(h)*int64(maxDim)+int64(w)/2)/int64(w)))
	}
	return max(1, int((int64(w)*int64(maxDim)+int64(h)/2)/int64(h))), maxDim
}
