package sessionstore

// OnWaiting sets the function Lock calls each time it finds the lock held
// and waits to try again.
func OnWaiting(s *Store, f func()) { s.waiting = f }
