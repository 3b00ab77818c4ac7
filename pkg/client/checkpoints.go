package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/govapi"
)

// Checkpoint returns the latest signed checkpoint, the note's text as
// auditd serves it (GET govapi.PathCheckpoint; a 404 *Error when none was
// signed). Open it with checkpoint.Open and the verifier keys you trust:
// the client does not.
func (c *Client) Checkpoint(ctx context.Context) ([]byte, error) {
	var note []byte
	_, err := c.do(ctx, http.MethodGet, govapi.PathCheckpoint, nil, nil, &note)
	return note, err
}

// InclusionProof returns the proof that the event with seq is in the tree
// of size (0: the latest checkpoint's size; GET govapi.PathProofInclusion).
// Check it with its Verify against a checkpoint of its TreeSize you opened
// yourself, and the event's hash against EventHash.
func (c *Client) InclusionProof(ctx context.Context, seq, size int64) (checkpoint.InclusionProof, error) {
	q := url.Values{"seq": {strconv.FormatInt(seq, 10)}}
	if size != 0 {
		q.Set("size", strconv.FormatInt(size, 10))
	}
	var data []byte
	if _, err := c.do(ctx, http.MethodGet, govapi.PathProofInclusion, q, nil, &data); err != nil {
		return checkpoint.InclusionProof{}, err
	}
	p, err := checkpoint.ParseInclusionProof(data)
	if err != nil {
		return checkpoint.InclusionProof{}, fmt.Errorf("auditd's answer: %w", err)
	}
	return p, nil
}

// ConsistencyProof returns the proof that the tree of size from is a prefix
// of the tree of size to (GET govapi.PathProofConsistency). Check it with
// its Verify against checkpoints of both sizes.
func (c *Client) ConsistencyProof(ctx context.Context, from, to int64) (checkpoint.ConsistencyProof, error) {
	q := url.Values{"from": {strconv.FormatInt(from, 10)}, "to": {strconv.FormatInt(to, 10)}}
	var data []byte
	if _, err := c.do(ctx, http.MethodGet, govapi.PathProofConsistency, q, nil, &data); err != nil {
		return checkpoint.ConsistencyProof{}, err
	}
	p, err := checkpoint.ParseConsistencyProof(data)
	if err != nil {
		return checkpoint.ConsistencyProof{}, fmt.Errorf("auditd's answer: %w", err)
	}
	return p, nil
}
