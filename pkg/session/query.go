package session

// Resolved reports whether key names a resource in the session's resolved
// context, for a front-end whose one call changes several resources (Codex's
// apply_patch): each must be resolved, as the call's own target is. Like
// the executor's lookup it is an access, renewing the resource's TTL.
func (st *State) Resolved(key string) bool {
	if st.ctx == nil {
		return false
	}
	_, ok := st.ctx.Lookup(key, st.now)
	return ok
}
