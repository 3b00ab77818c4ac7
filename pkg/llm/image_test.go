package llm

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
)

func solid(w, h int) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{200, 30, 30, 255})
		}
	}
	return img
}

func encodePNG(t *testing.T, img image.Image) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t *testing.T, img image.Image) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeGIF(t *testing.T, img image.Image) []byte {
	var b bytes.Buffer
	if err := gif.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pngHeader is a PNG whose header declares w×h pixels and whose data is
// missing: what a decompression bomb looks like to DecodeConfig.
func pngHeader(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

func TestResize(t *testing.T) {
	smallPNG := encodePNG(t, solid(40, 30))
	smallJPEG := encodeJPEG(t, solid(40, 30))
	for _, tc := range []struct {
		name         string
		in           []byte
		maxDim       int
		wantType     string
		wantW, wantH int
		unchanged    bool
	}{
		{name: "wide PNG shrinks, aspect kept", in: encodePNG(t, solid(400, 200)), maxDim: 100, wantType: "image/png", wantW: 100, wantH: 50},
		{name: "tall JPEG stays JPEG", in: encodeJPEG(t, solid(300, 600)), maxDim: 150, wantType: "image/jpeg", wantW: 75, wantH: 150},
		{name: "odd ratio rounds", in: encodePNG(t, solid(333, 100)), maxDim: 100, wantType: "image/png", wantW: 100, wantH: 30},
		{name: "a line keeps a pixel", in: encodePNG(t, solid(1000, 1)), maxDim: 10, wantType: "image/png", wantW: 10, wantH: 1},
		{name: "small PNG is not upscaled", in: smallPNG, maxDim: 1024, wantType: "image/png", wantW: 40, wantH: 30, unchanged: true},
		{name: "small JPEG is not upscaled", in: smallJPEG, maxDim: 40, wantType: "image/jpeg", wantW: 40, wantH: 30, unchanged: true},
		{name: "maxDim 0 keeps the size", in: smallPNG, maxDim: 0, wantType: "image/png", wantW: 40, wantH: 30, unchanged: true},
		{name: "GIF becomes PNG, not upscaled", in: encodeGIF(t, solid(50, 20)), maxDim: 100, wantType: "image/png", wantW: 50, wantH: 20},
		{name: "GIF shrinks", in: encodeGIF(t, solid(50, 20)), maxDim: 25, wantType: "image/png", wantW: 25, wantH: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, mt, w, h, err := Resize(tc.in, tc.maxDim)
			if err != nil {
				t.Fatal(err)
			}
			if mt != tc.wantType || w != tc.wantW || h != tc.wantH {
				t.Fatalf("got %s %dx%d, want %s %dx%d", mt, w, h, tc.wantType, tc.wantW, tc.wantH)
			}
			if tc.unchanged && !bytes.Equal(out, tc.in) {
				t.Errorf("an image within the limit was re-encoded")
			}
			img, format, err := image.Decode(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			if "image/"+format != mt {
				t.Errorf("output is %s, said %s", format, mt)
			}
			if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
				t.Errorf("output is %dx%d, said %dx%d", b.Dx(), b.Dy(), w, h)
			}
			r, g, bl, _ := img.At(w/2, h/2).RGBA()
			// Red stays red (GIF's palette shifts it a little).
			if r>>8 < 150 || g>>8 > 80 || bl>>8 > 80 {
				t.Errorf("centre pixel %d,%d,%d, want red", r>>8, g>>8, bl>>8)
			}
		})
	}
}

func TestResizeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "not a PNG, JPEG, GIF or WebP"},
		{"text", []byte("hello"), "not a PNG, JPEG, GIF or WebP"},
		{"bomb", pngHeader(100000, 100000), "exceeds 64 megapixels"},
		{"zero width", pngHeader(0, 10), "PNG"},
		{"truncated", pngHeader(10, 10), "decoding png"},
	} {
		_, _, _, _, err := Resize(tc.in, 100)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func BenchmarkResize(b *testing.B) {
	var buf bytes.Buffer
	png.Encode(&buf, solid(1920, 1080))
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, _, _, err := Resize(data, 1024); err != nil {
			b.Fatal(err)
		}
	}
}
