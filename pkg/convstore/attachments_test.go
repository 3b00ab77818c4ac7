package convstore

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func TestAttachments(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	png := []byte("\x89PNG\r\n\x1a\n fake image")
	ref, err := s.PutAttachment(ctx, "image/png", png)
	if err != nil {
		t.Fatal(err)
	}
	if want := attachmentRef(png); ref != want || !strings.HasPrefix(ref, "att_") || len(ref) != 4+64 {
		t.Fatalf("ref %q, want %q", ref, want)
	}
	// Stored once: the same bytes again give the same ref and no row.
	again, err := s.PutAttachment(ctx, "image/jpeg", png)
	if err != nil || again != ref {
		t.Fatalf("again: %q, %v", again, err)
	}
	var rows int
	if err := s.reader.QueryRow("SELECT count(*) FROM attachments").Scan(&rows); err != nil || rows != 1 {
		t.Errorf("%d attachment rows (%v), want 1", rows, err)
	}
	mt, data, err := s.Attachment(ctx, ref)
	if err != nil || mt != "image/png" || !bytes.Equal(data, png) {
		t.Errorf("Attachment = %q, %q, %v", mt, data, err)
	}

	for _, tc := range []struct {
		name, mediaType string
		data            []byte
		want            error
		text            string
	}{
		{"no media type", "", png, ErrInvalid, "media_type is empty"},
		{"media type without a subtype", "image", png, ErrInvalid, "media_type is not type/subtype"},
		{"media type with parameters", "image/png; q=1", png, nil, ""},
		{"media type with a newline", "image/png\n", png, ErrInvalid, "media_type holds the control character"},
		{"no data", "image/png", nil, ErrInvalid, "attachment data is empty"},
		{"20 MiB", "image/png", bytes.Repeat([]byte{1}, MaxAttachmentBytes), nil, ""},
		{"over 20 MiB", "image/png", bytes.Repeat([]byte{1}, MaxAttachmentBytes+1), ErrTooLarge, "attachment data is 20971521 bytes, more than 20971520"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.PutAttachment(ctx, tc.mediaType, tc.data)
			if tc.want == nil && err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && (!errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text)) {
				t.Fatalf("PutAttachment: %v, want %v naming %q", err, tc.want, tc.text)
			}
		})
	}

	for _, tc := range []struct {
		ref  string
		want error
	}{
		{attachmentRef([]byte("never stored")), ErrNotFound},
		{"att_" + strings.Repeat("A", 64), ErrInvalid},
		{"att_abc", ErrInvalid},
		{strings.TrimPrefix(ref, "att_"), ErrInvalid},
		{"", ErrInvalid},
	} {
		if _, _, err := s.Attachment(ctx, tc.ref); !errors.Is(err, tc.want) {
			t.Errorf("Attachment(%q): %v, want %v", tc.ref, err, tc.want)
		}
	}

	// A damaged row is an error, not another image.
	if _, err := s.writer.Exec("UPDATE attachments SET data = ? WHERE ref = ?", []byte("other"), ref); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Attachment(ctx, ref); err == nil || !strings.Contains(err.Error(), "do not match") {
		t.Errorf("damaged attachment: %v", err)
	}
}
