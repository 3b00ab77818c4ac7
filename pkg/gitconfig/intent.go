package gitconfig

import (
	"path/filepath"

	"github.com/govkit/govkit/pkg/intent"
)

// IntentRisks adapts Inspect to the classifier's RepoConfigFunc.
//
// It reads the repository's files on every call, on purpose: a batch can
// outlive a change to the config (an agent writes core.fsmonitor into
// .git/config, then asks about git status), so a cached answer would be a
// hole.
func IntentRisks(dir string) ([]intent.GitRisk, error) {
	risks, err := Inspect(dir)
	if err != nil {
		return nil, err
	}
	out := make([]intent.GitRisk, len(risks))
	for i, r := range risks {
		out[i] = intent.GitRisk{Key: r.Key, Source: r.Source}
	}
	return out, nil
}

// Classify classifies a command run in dir, checking git commands against
// the repository there: what a hook does with the working directory an
// agent reports. Without an absolute dir it classifies without one.
func Classify(command, dir string) intent.Result {
	if dir == "" || !filepath.IsAbs(dir) {
		return intent.Classify(command)
	}
	return intent.New(intent.Options{Dir: dir, RepoConfig: IntentRisks}).Classify(command)
}
