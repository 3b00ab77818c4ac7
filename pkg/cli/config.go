package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Configuration (DESIGN §3; the environment rule of issue 20). Every flag a
// user did not set on the command line is looked up, in this order, and the
// first value found is written into the flag, so command code only ever
// reads its own typed flag fields:
//
//  1. the environment (an empty value counts as unset), the first of:
//     a. GOVKIT_<BINARY>_<FLAG>: this binary only, e.g. GOVKIT_GOVBOT_SINCE;
//     b. the older names a flag keeps working (KeepEnv), e.g.
//     GOVKIT_AUDIT_URL for --url;
//     c. GOVKIT_<FLAG>: every binary with that flag, e.g. GOVKIT_OUTPUT;
//     where <BINARY> and <FLAG> are the binary's name and the long flag name
//     in upper case with "-" as "_". A former spelling of a flag (AliasFlag)
//     is a flag too: its variables come after the flag's own.
//  2. the config file: the key in the binary's own section, then the same
//     key at the top level (a former spelling after the flag's name);
//  3. the flag's default.
//
// The config file is the one named by --config or GOVKIT_CONFIG (it must
// exist; --config '' reads none), otherwise $XDG_CONFIG_HOME/govkit/config.yaml
// (~/.config/govkit/config.yaml without XDG_CONFIG_HOME) and
// /etc/govkit/config.yaml, each read only if it exists, the user's file
// winning over the system one key by key. A file is YAML:
//
//	output: json          # shared: every binary with an --output flag
//	classify:             # only classify; wins over the shared keys
//	  cwd: /srv/repo
//	  output: text
//	approvals:            # another binary's section: classify ignores it
//	  url: http://127.0.0.1:1199
//
// Keys are long flag names. A key in the binary's own section that names no
// flag of that binary is an error (a typo would otherwise silently do
// nothing); shared keys belong to whichever binaries have such a flag.
// Flags that describe one invocation (SkipConfig), --help, --version,
// --config and cobra's completion flags read neither.

const (
	// EnvPrefix starts every govkit environment variable.
	EnvPrefix = "GOVKIT_"
	// EnvConfig names the config file when --config is not given.
	EnvConfig = EnvPrefix + "CONFIG"

	configFlag     = "config"
	maxConfigBytes = 1 << 20

	annotationEnv     = "govkit_env"       // older variable names the flag keeps
	annotationSkip    = "govkit_no_config" // the flag takes no env or file value
	annotationSource  = "govkit_source"    // where Load found the flag's value
	annotationAliasOf = "govkit_alias_of"  // the flag is a former spelling of this one
)

// AddConfigFlag declares the persistent --config flag on a binary's root.
func AddConfigFlag(cmd *cobra.Command) {
	cmd.PersistentFlags().String(configFlag, "",
		"read settings from `FILE` (default $XDG_CONFIG_HOME/govkit/config.yaml, then /etc/govkit/config.yaml)")
}

// SkipConfig marks flags that describe one invocation rather than a
// preference (classify's --null): they take no value from the environment or
// a config file.
func SkipConfig(flags *pflag.FlagSet, names ...string) {
	for _, name := range names {
		_ = flags.SetAnnotation(name, annotationSkip, []string{"true"})
	}
}

// KeepEnv keeps older environment variables working for flag name, read
// after GOVKIT_<BINARY>_<FLAG> and before GOVKIT_<FLAG> (DESIGN §7's
// GOVKIT_AUDIT_URL for --url), so that a deployment configured with an
// older name behaves the same whatever else is set.
func KeepEnv(flags *pflag.FlagSet, name string, envs ...string) {
	f := flags.Lookup(name)
	if f == nil {
		panic("cli.KeepEnv: no flag --" + name)
	}
	for _, env := range envs {
		if !slices.Contains(f.Annotations[annotationEnv], env) {
			_ = flags.SetAnnotation(name, annotationEnv, append(slices.Clone(f.Annotations[annotationEnv]), env))
		}
	}
}

// EnvNames returns the environment variables that set f in binary prog, the
// first one set winning: GOVKIT_<PROG>_<FLAG>, the older names kept with
// KeepEnv, GOVKIT_<FLAG>. It returns none for a flag that takes no value
// from the environment.
func EnvNames(prog string, f *pflag.Flag) []string {
	if !Configurable(f) {
		return nil
	}
	names := []string{EnvPrefix + envWord(prog) + "_" + envWord(f.Name)}
	for _, env := range append(slices.Clone(f.Annotations[annotationEnv]), EnvPrefix+envWord(f.Name)) {
		if !slices.Contains(names, env) {
			names = append(names, env)
		}
	}
	return names
}

// envWord is name as it appears in a variable: upper case, "-" as "_".
func envWord(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// AliasFlag keeps old, a former spelling of flag name, working (issue 20:
// a renamed flag keeps its old spelling): on the command line as a hidden
// flag that sets the same value, as a config-file key, and through its own
// variables (GOVKIT_<BINARY>_<OLD>, GOVKIT_<OLD>), read after the flag's.
func AliasFlag(flags *pflag.FlagSet, name string, old ...string) {
	f := flags.Lookup(name)
	if f == nil {
		panic("cli.AliasFlag: no flag --" + name)
	}
	for _, o := range old {
		a := &pflag.Flag{
			Name: o, Usage: "former spelling of --" + name, Value: f.Value,
			DefValue: f.DefValue, NoOptDefVal: f.NoOptDefVal, Hidden: true,
			Annotations: map[string][]string{annotationAliasOf: {name}},
		}
		if v := f.Annotations[annotationSkip]; len(v) > 0 {
			a.Annotations[annotationSkip] = v
		}
		flags.AddFlag(a)
	}
}

// AliasOf returns the flag f is a former spelling of (AliasFlag), or "".
func AliasOf(f *pflag.Flag) string {
	if v := f.Annotations[annotationAliasOf]; len(v) == 1 {
		return v[0]
	}
	return ""
}

// Aliases returns the former spellings of flag name in flags, sorted.
func Aliases(flags *pflag.FlagSet, name string) []string {
	var old []string
	flags.VisitAll(func(f *pflag.Flag) {
		if AliasOf(f) == name {
			old = append(old, f.Name)
		}
	})
	return old
}

// Configurable reports whether f takes a value from the environment and
// config files: every flag but --help, --version, --config, cobra's
// completion flags, and those marked with SkipConfig.
func Configurable(f *pflag.Flag) bool {
	switch f.Name {
	case "help", "version", configFlag, "no-descriptions": // the last is cobra's completion flag
		return false
	}
	return len(f.Annotations[annotationSkip]) == 0
}

// FlagSource says where the value of flag name came from when it was not the
// command line: the environment variable ("GOVKIT_CWD") or the config key and
// file (`"classify.cwd" in /etc/govkit/config.yaml`). It is "" for a value
// given as a flag, a default, or an unknown flag. Commands use it so that an
// error about a value names the place the user must fix.
func FlagSource(flags *pflag.FlagSet, name string) string {
	f := flags.Lookup(name)
	if f == nil || f.Changed {
		return ""
	}
	if v := f.Annotations[annotationSource]; len(v) == 1 {
		return v[0]
	}
	return ""
}

// FlagName names flag name in an error the way the user set it: "--name",
// the former spelling they typed ("--gateway" for --url), or
// "--name (from GOVKIT_X)" when its value came from the environment or a
// config file (FlagSource), so that the user knows where to fix it.
func FlagName(flags *pflag.FlagSet, name string) string {
	if src := FlagSource(flags, name); src != "" {
		return "--" + name + " (from " + src + ")"
	}
	if f := flags.Lookup(name); f != nil && !f.Changed {
		for _, old := range Aliases(flags, name) {
			if flags.Changed(old) {
				return "--" + old
			}
		}
	}
	return "--" + name
}

func setSource(f *pflag.Flag, source string) {
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[annotationSource] = []string{source}
}

// ConfigLoader fills unset flags from the environment and config files.
type ConfigLoader struct {
	// Prog is the binary's name: the name of its section in a config file.
	Prog string
	// LookupEnv reads the environment (os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// DefaultFiles are read, when they exist, if no file is named
	// explicitly; earlier files win.
	DefaultFiles []string
}

// NewConfigLoader returns the loader for prog with the process environment and
// the default file locations.
func NewConfigLoader(prog string) *ConfigLoader {
	return &ConfigLoader{Prog: prog, LookupEnv: os.LookupEnv, DefaultFiles: DefaultConfigFiles(os.LookupEnv)}
}

// DefaultConfigFiles returns the user's config file (XDG base directory
// spec, which ignores a relative XDG_CONFIG_HOME) and the system one.
func DefaultConfigFiles(lookupEnv func(string) (string, bool)) []string {
	var files []string
	if dir, _ := lookupEnv("XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
		files = append(files, filepath.Join(dir, "govkit", "config.yaml"))
	} else if home, _ := lookupEnv("HOME"); home != "" {
		files = append(files, filepath.Join(home, ".config", "govkit", "config.yaml"))
	}
	return append(files, "/etc/govkit/config.yaml")
}

// configFile is one parsed config file: this binary's section and the shared
// top-level keys.
type configFile struct {
	path    string
	section map[string]any
	shared  map[string]any
}

// Load writes env and config-file values into the flags of cmd that were
// not set on the command line. It touches the filesystem only to stat the
// default file locations and to read the files that exist.
func (l *ConfigLoader) Load(cmd *cobra.Command) error {
	paths, explicit, err := l.paths(cmd)
	if err != nil {
		return err
	}
	var files []*configFile
	if len(paths) > 0 {
		known := knownKeys(cmd.Root())
		for _, p := range paths {
			f, err := readConfigFile(p, l.Prog, known, explicit)
			if err != nil {
				return err
			}
			files = append(files, f)
		}
	}

	var firstErr error
	flags := cmd.Flags()
	flags.VisitAll(func(f *pflag.Flag) {
		if firstErr != nil || !Configurable(f) || AliasOf(f) != "" {
			return
		}
		// f and its former spellings share one value: set on the command
		// line under any name, none of them is looked up.
		group := []*pflag.Flag{f}
		for _, old := range Aliases(flags, f.Name) {
			group = append(group, flags.Lookup(old))
		}
		for _, g := range group {
			if g.Changed {
				return
			}
		}
		for _, g := range group {
			for _, env := range EnvNames(l.Prog, g) {
				v, ok := l.LookupEnv(env)
				if !ok || v == "" {
					continue
				}
				if err := f.Value.Set(v); err != nil {
					firstErr = Failf("%s: invalid value %q: %v", env, v, err).
						WithHint(fmt.Sprintf("fix or unset %s (it sets --%s)", env, f.Name))
				}
				setSource(f, env)
				return
			}
		}
		names := make([]string, len(group))
		for i, g := range group {
			names[i] = g.Name
		}
		for _, file := range files {
			if v, key, ok := file.lookup(l.Prog, names); ok {
				if err := setFlag(f, v); err != nil {
					firstErr = Failf("config file %s: key %q: %v", file.path, key, err).
						WithHint(fmt.Sprintf("fix %q in %s (it sets --%s)", key, file.path, f.Name))
				}
				setSource(f, fmt.Sprintf("%q in %s", key, file.path))
				return
			}
		}
	})
	return firstErr
}

// paths returns the config files to read and whether they were named
// explicitly.
func (l *ConfigLoader) paths(cmd *cobra.Command) ([]string, bool, error) {
	if f := cmd.Flags().Lookup(configFlag); f != nil && f.Changed {
		if f.Value.String() == "" {
			return nil, true, nil
		}
		return []string{f.Value.String()}, true, nil
	}
	if v, ok := l.LookupEnv(EnvConfig); ok && v != "" {
		return []string{v}, true, nil
	}
	var paths []string
	for _, p := range l.DefaultFiles {
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, false, Failf("config file %s: %v", p, unwrapPathError(err)).
				WithHint("make it readable, or pass --config with another file")
		case fi.IsDir():
			return nil, false, Failf("config file %s: is a directory", p)
		}
		paths = append(paths, p)
	}
	return paths, false, nil
}

// readConfigFile reads at most 1 MiB of YAML with viper and checks the keys of
// prog's section against the flag names of its command tree.
func readConfigFile(path, prog string, known []string, explicit bool) (*configFile, error) {
	hint := "check the file, or pass --config with another file"
	if explicit {
		hint = fmt.Sprintf("check the file named by --config or %s", EnvConfig)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, Failf("config file %s: %v", path, unwrapPathError(err)).WithHint(hint)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxConfigBytes+1))
	if err != nil {
		return nil, Failf("config file %s: %v", path, unwrapPathError(err)).WithHint(hint)
	}
	if len(data) > maxConfigBytes {
		return nil, Failf("config file %s: larger than 1 MiB", path).WithHint(hint)
	}

	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		var pe viper.ConfigParseError
		if errors.As(err, &pe) && pe.Unwrap() != nil {
			err = pe.Unwrap()
		}
		return nil, Failf("config file %s: %v", path, err).WithHint(hint)
	}

	f := &configFile{path: path, section: map[string]any{}, shared: map[string]any{}}
	prefix := prog + "."
	for _, key := range v.AllKeys() {
		switch {
		case key == prog:
			return nil, Failf("config file %s: key %q must be a mapping of %s settings", path, key, prog).WithHint(hint)
		case strings.HasPrefix(key, prefix):
			name := strings.TrimPrefix(key, prefix)
			if name == "" {
				// YAML reads an unquoted null or ~ as no key at all.
				return nil, Failf("config file %s: empty or null key in section %q", path, prog).WithHint(hint)
			}
			if !slices.Contains(known, name) {
				return nil, Failf("config file %s: unknown key %q", path, key).
					WithHint(fmt.Sprintf("the keys of section %q are the long flag names of %s: %s", prog, prog, strings.Join(known, ", ")))
			}
			f.section[name] = v.Get(key)
		case !strings.Contains(key, "."):
			f.shared[key] = v.Get(key)
		}
		// Any other key lives in another binary's section.
	}
	return f, nil
}

// lookup returns the value of the first of names (a flag and its former
// spellings) in prog's section, else the first at the top level.
func (f *configFile) lookup(prog string, names []string) (value any, key string, ok bool) {
	for _, name := range names {
		if v, ok := f.section[name]; ok {
			return v, prog + "." + name, true
		}
	}
	for _, name := range names {
		if v, ok := f.shared[name]; ok {
			return v, name, true
		}
	}
	return nil, "", false
}

// setFlag writes one YAML value into a flag: scalars through Set, lists into
// slice flags.
func setFlag(f *pflag.Flag, value any) error {
	switch v := value.(type) {
	case nil:
		return errors.New("has no value")
	case map[string]any:
		return errors.New("must be a single value, not a mapping")
	case []any:
		sv, ok := f.Value.(pflag.SliceValue)
		if !ok {
			return errors.New("must be a single value, not a list")
		}
		items := make([]string, len(v))
		for i, item := range v {
			switch item.(type) {
			case nil, map[string]any, []any:
				return fmt.Errorf("item %d must be a single value", i+1)
			}
			items[i] = fmt.Sprint(item)
		}
		return sv.Replace(items)
	}
	s := fmt.Sprint(value)
	if err := f.Value.Set(s); err != nil {
		return fmt.Errorf("invalid value %q: %v", s, err)
	}
	return nil
}

// knownKeys returns, sorted, the flag names in root's command tree that a
// config file may set.
func knownKeys(root *cobra.Command) []string {
	var keys []string
	add := func(f *pflag.Flag) {
		if Configurable(f) && !slices.Contains(keys, f.Name) {
			keys = append(keys, f.Name)
		}
	}
	VisitCommands(root, func(c *cobra.Command) {
		c.Flags().VisitAll(add)
		c.PersistentFlags().VisitAll(add)
	})
	slices.Sort(keys)
	return keys
}

// unwrapPathError drops the *fs.PathError wrapper, whose message repeats the
// path the caller already names.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
