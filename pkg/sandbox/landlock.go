package sandbox

// Landlock access rights (uapi linux/landlock.h), by the ABI that added them.
const (
	accessExecute     = 1 << 0
	accessWriteFile   = 1 << 1
	accessReadFile    = 1 << 2
	accessReadDir     = 1 << 3
	accessRemoveDir   = 1 << 4
	accessRemoveFile  = 1 << 5
	accessMakeChar    = 1 << 6
	accessMakeDir     = 1 << 7
	accessMakeReg     = 1 << 8
	accessMakeSock    = 1 << 9
	accessMakeFifo    = 1 << 10
	accessMakeBlock   = 1 << 11
	accessMakeSym     = 1 << 12
	accessRefer       = 1 << 13 // ABI 2
	accessTruncate    = 1 << 14 // ABI 3
	accessIoctlDev    = 1 << 15 // ABI 5
	accessResolveUnix = 1 << 16 // ABI 9

	accessNetBindTCP       = 1 << 0 // ABI 4
	accessNetConnectTCP    = 1 << 1 // ABI 4
	accessNetBindUDP       = 1 << 2 // ABI 10
	accessNetConnectSendUD = 1 << 3 // ABI 10
	accessNetUDP           = accessNetBindUDP | accessNetConnectSendUD

	scopeAbstractUnix = 1 << 0 // ABI 6
	scopeSignal       = 1 << 1 // ABI 6
)

// maxABI is the newest Landlock ABI go-landlock v0.11.0 knows. A newer
// kernel is driven at this ABI (it accepts older rulesets), and the report
// says so.
const maxABI = 11

// Minimum ABIs per level: readonly needs truncate(2) covered (ABI 3), or a
// "read-only" command could still empty any file; isolated needs TCP rules.
const (
	minABIReadOnly = 3
	minABIIsolated = 4
)

// fsRights is every filesystem right the kernel handles at abi.
func fsRights(abi int) uint64 {
	switch {
	case abi <= 0:
		return 0
	case abi == 1:
		return 1<<13 - 1
	case abi == 2:
		return 1<<14 - 1
	case abi <= 4:
		return 1<<15 - 1
	case abi <= 8:
		return 1<<16 - 1
	default:
		return 1<<17 - 1
	}
}

// netRights is every network right the kernel handles at abi.
func netRights(abi int) uint64 {
	switch {
	case abi < 4:
		return 0
	case abi < 10:
		return accessNetBindTCP | accessNetConnectTCP
	default:
		return accessNetBindTCP | accessNetConnectTCP | accessNetUDP
	}
}

// scopes is every IPC scope the kernel handles at abi.
func scopes(abi int) uint64 {
	if abi < 6 {
		return 0
	}
	return scopeAbstractUnix | scopeSignal
}

// pathRule grants access beneath paths; optional paths may be missing.
type pathRule struct {
	access   uint64
	paths    []string
	optional bool
}

// landlockRules is a whole Landlock ruleset: what it handles (denies unless
// granted) and what it grants. No network port is ever granted.
type landlockRules struct {
	fs, net, scoped uint64
	paths           []pathRule
}

// buildLandlock is the ruleset for level at abi. ttys are the terminal
// devices the child found behind its fds 0–2. noUnix leaves out connecting
// to pathname unix sockets (Config.NoUnixSockets).
func buildLandlock(level Level, abi int, tempDir string, ttys []string, noUnix bool) landlockRules {
	fs := fsRights(abi)
	r := landlockRules{fs: fs}
	if level == Isolated {
		r.net, r.scoped = netRights(abi), scopes(abi)
	}
	read := uint64(accessExecute|accessReadFile|accessReadDir|accessResolveUnix) & fs
	if noUnix {
		read &^= accessResolveUnix
	}
	device := uint64(accessReadFile|accessWriteFile|accessTruncate|accessIoctlDev) & fs
	// Everything in the temp dir but device nodes: as root, mknod of the
	// disk's block device there would be a writable path to the disk.
	tmp := fs &^ (accessMakeChar | accessMakeBlock)
	r.paths = []pathRule{
		{access: read, paths: []string{"/"}},
		{access: device, paths: []string{"/dev/null"}},
		{access: device, paths: []string{"/dev/tty"}, optional: true},
		{access: tmp, paths: []string{tempDir}},
	}
	if len(ttys) > 0 {
		r.paths = append(r.paths, pathRule{access: device, paths: ttys})
	}
	return r
}
