package serve_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/internal/llmfake"
	"github.com/govkit/govkit/pkg/serve"
	"github.com/govkit/govkit/pkg/session/conversation"
)

// testPNG is a w×h PNG with a gradient (not flat, so that resizing has
// something to do).
func testPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{R: uint8(x), G: uint8(y), B: 128, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// An image larger than MaxImageDim is resized, stored once and kept in
// the message as a reference (att_<sha256 of the stored bytes>), and sent
// to the model as an OpenAI image_url data URL of the resized image
// (REQ-BED-013).
func TestImageResizedStoredAndSent(t *testing.T) {
	r := newRigWith(t, func(o *serve.Options) { o.MaxImageDim = 64 }, llmfake.Step{Text: "a gradient"})
	c := r.create("")
	original := testPNG(t, 256, 128)
	in := serve.MessageInput{Text: "what is this?", Images: []serve.ImageInput{{MediaType: "image/png", Data: base64.StdEncoding.EncodeToString(original)}}}
	if err := r.c.Do(context.Background(), http.MethodPost, path(serve.PathMessages, c.ID), in, nil); err != nil {
		t.Fatal(err)
	}
	v := r.waitState(c.ID, conversation.Idle)
	var user conversation.Message
	for _, m := range v.Messages {
		if m.Role == conversation.RoleUser {
			user = m
		}
	}
	if len(user.Attachments) != 1 {
		t.Fatalf("the user message: %+v", user)
	}
	a := user.Attachments[0]
	if !strings.HasPrefix(a.Ref, "att_") || a.MediaType != "image/png" || a.Width != 64 || a.Height != 32 {
		t.Errorf("the attachment: %+v", a)
	}

	// The request: the text and the image as content parts.
	reqs := r.fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	var sent []byte
	for _, m := range decodeRequest(t, reqs[0]).Messages {
		if m.Role != "user" {
			continue
		}
		var parts []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			t.Fatalf("the user message's content is not parts: %s", m.Content)
		}
		if len(parts) != 2 || parts[0].Type != "text" || parts[0].Text != "what is this?" || parts[1].Type != "image_url" {
			t.Fatalf("the user message's parts: %s", m.Content)
		}
		b64, ok := strings.CutPrefix(parts[1].ImageURL.URL, "data:image/png;base64,")
		if !ok {
			t.Fatalf("the image URL: %.60s…", parts[1].ImageURL.URL)
		}
		var err error
		if sent, err = base64.StdEncoding.DecodeString(b64); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(sent))
	if err != nil || cfg.Width != 64 || cfg.Height != 32 {
		t.Fatalf("the image sent: %dx%d, %v", cfg.Width, cfg.Height, err)
	}
	sum := sha256.Sum256(sent)
	if a.Ref != "att_"+hex.EncodeToString(sum[:]) {
		t.Errorf("the reference %s is not the sent image's sha256", a.Ref)
	}

	// Stored: the attachment holds the resized bytes; the message row only
	// the reference.
	media, stored, err := r.store.Attachment(context.Background(), a.Ref)
	if err != nil || media != "image/png" || !bytes.Equal(stored, sent) {
		t.Errorf("the stored attachment: %s, %d bytes, %v", media, len(stored), err)
	}
	rows, err := r.store.Messages(context.Background(), c.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		body := string(row.Body)
		if strings.Contains(body, base64.StdEncoding.EncodeToString(sent)[:64]) || strings.Contains(body, in.Images[0].Data[:64]) {
			t.Errorf("message %d stores image bytes (%d bytes of body)", row.Seq, len(body))
		}
		if row.Role == conversation.RoleUser && !strings.Contains(body, a.Ref) {
			t.Errorf("the user message's row lacks the reference: %s", body)
		}
	}
}
