package ops

import "context"

// Who reads, from a request's context, the tenant and the user that the
// front's inbound authentication found for it; "" where there is none (a
// single-user gateway has no tenant). The front installs it once, so every
// piece here attributes work the same way. It must be cheap and safe for
// concurrent use.
type Who func(ctx context.Context) (tenant, user string)

// who calls w, which may be nil.
func (w Who) of(ctx context.Context) (tenant, user string) {
	if w == nil || ctx == nil {
		return "", ""
	}
	return w(ctx)
}
