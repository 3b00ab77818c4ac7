package gitconfig

import "github.com/govkit/govkit/pkg/intent"

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
