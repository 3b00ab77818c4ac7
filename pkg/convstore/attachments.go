package convstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// refPrefix starts every attachment reference: "att_" and the SHA-256 of
// the bytes in lowercase hex.
const refPrefix = "att_"

// PutAttachment stores an attachment's bytes once and returns its
// reference, which messages carry instead of the bytes (B-13): the same
// bytes always have the same reference, and putting them again stores
// nothing (the first media type stays). data is at most
// MaxAttachmentBytes.
func (s *Store) PutAttachment(ctx context.Context, mediaType string, data []byte) (ref string, err error) {
	defer wrap(&err, "put attachment")
	if err := checkMediaType(mediaType); err != nil {
		return "", err
	}
	switch {
	case len(data) == 0:
		return "", fmt.Errorf("%w: attachment data is empty", ErrInvalid)
	case len(data) > MaxAttachmentBytes:
		return "", fmt.Errorf("%w: attachment data is %d bytes, more than %d", ErrTooLarge, len(data), MaxAttachmentBytes)
	}
	ref = attachmentRef(data)
	_, err = s.writer.ExecContext(ctx, `INSERT INTO attachments (ref, media_type, size, created_at, data)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (ref) DO NOTHING`,
		ref, mediaType, len(data), formatTime(s.now()), data)
	if err != nil {
		return "", writeError(err)
	}
	return ref, nil
}

// Attachment returns an attachment's media type and bytes, or ErrNotFound.
// The bytes are checked against the reference, so that a damaged row is an
// error rather than another image.
func (s *Store) Attachment(ctx context.Context, ref string) (mediaType string, data []byte, err error) {
	defer wrap(&err, "read attachment")
	if !validRef(ref) {
		return "", nil, fmt.Errorf("%w: attachment ref is not %s and 64 hex digits", ErrInvalid, refPrefix)
	}
	err = s.reader.QueryRowContext(ctx, "SELECT media_type, data FROM attachments WHERE ref = ?", ref).Scan(&mediaType, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, fmt.Errorf("%w: attachment %s", ErrNotFound, ref)
	}
	if err != nil {
		return "", nil, err
	}
	if attachmentRef(data) != ref {
		return "", nil, fmt.Errorf("attachment %s: the stored bytes do not match their reference", ref)
	}
	return mediaType, data, nil
}

func attachmentRef(data []byte) string {
	sum := sha256.Sum256(data)
	return refPrefix + hex.EncodeToString(sum[:])
}

func validRef(ref string) bool {
	h, ok := strings.CutPrefix(ref, refPrefix)
	if !ok || len(h) != 2*sha256.Size {
		return false
	}
	for _, c := range []byte(h) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// checkMediaType accepts a type/subtype media type (parameters allowed),
// as a provider's image_url data URL needs one.
func checkMediaType(mt string) error {
	if err := checkText("media_type", mt, true); err != nil {
		return err
	}
	typ, sub, ok := strings.Cut(strings.TrimSpace(strings.SplitN(mt, ";", 2)[0]), "/")
	if !ok || typ == "" || sub == "" || strings.ContainsAny(typ+sub, " /") {
		return fmt.Errorf("%w: media_type is not type/subtype", ErrInvalid)
	}
	return nil
}
