package oauth

import "time"

// SetClock makes c read the time from now, so tests can let tokens age
// without sleeping.
func (c *Client) SetClock(now func() time.Time) { c.now = now }

// SetRenewTimeout bounds each network step of a renewal (discovery, the
// token request) to d.
func (c *Client) SetRenewTimeout(d time.Duration) { c.renewTimeout = d }
