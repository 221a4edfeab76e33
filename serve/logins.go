package serve

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/oauth"
)

// Logins runs sign-ins started by the gateway's authenticate action: the
// person asked their agent to sign in, so a browser may open. The login
// finishes in the background; the model is told, without any secret, what
// the person has to do and to call status afterwards.
type Logins struct {
	OAuth *oauth.Client
	// Open shows the authorization URL to the person; default
	// oauth.OpenBrowser with the process environment.
	Open func(url string) error
	// Timeout bounds one sign-in; default 5 minutes.
	Timeout time.Duration

	mu      sync.Mutex
	running map[string]chan struct{} // server → closed when its login ends
	wg      sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
	once    sync.Once
}

func (l *Logins) init() {
	l.once.Do(func() {
		l.running = make(map[string]chan struct{})
		l.ctx, l.cancel = context.WithCancel(context.Background())
		if l.Timeout <= 0 {
			l.Timeout = 5 * time.Minute
		}
	})
}

// StartLogin begins a sign-in to cfg's server (or reports the one already
// running) and returns a non-secret message for the model.
func (l *Logins) StartLogin(ctx context.Context, cfg mcpgate.ServerConfig) (string, error) {
	l.init()
	finish := fmt.Sprintf("When the person has finished, call {\"action\":\"status\",\"server\":%q}.", cfg.ID)
	l.mu.Lock()
	if _, ok := l.running[cfg.ID]; ok {
		l.mu.Unlock()
		return "A sign-in to " + cfg.ID + " is already waiting for the person in their browser. " + finish, nil
	}
	done := make(chan struct{})
	l.running[cfg.ID] = done
	l.mu.Unlock()

	opened := make(chan error, 1)
	open := func(_ context.Context, url string) error {
		var err error
		if l.Open != nil {
			err = l.Open(url)
		} else {
			err = oauth.OpenBrowser(url, nil)
		}
		opened <- err
		return nil // the person can still finish from a terminal
	}
	result := make(chan error, 1)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer func() {
			l.mu.Lock()
			delete(l.running, cfg.ID)
			l.mu.Unlock()
			close(done)
		}()
		_, err := l.OAuth.Login(l.ctx, cfg, &oauth.LoginOptions{Open: open, Timeout: l.Timeout})
		result <- err
	}()

	select {
	case err := <-opened:
		if err != nil {
			return "Could not open a browser on this machine. Ask the person to run in a terminal: mcpgate auth " + cfg.ID + ". " + finish, nil
		}
		return "A browser window opened for the person to sign in to " + cfg.ID +
			" (if it did not, they can run in a terminal: mcpgate auth " + cfg.ID + "). " + finish, nil
	case err := <-result:
		if err != nil {
			return "", err
		}
		return "Signed in to " + cfg.ID + " without a browser.", nil
	case <-ctx.Done():
		return "", &mcpgate.Error{Category: mcpgate.CategoryCancelled, Message: "cancelled", Err: ctx.Err()}
	}
}

// Logout deletes the server's credential (revoking it when supported).
func (l *Logins) Logout(ctx context.Context, cfg mcpgate.ServerConfig) error {
	_, err := l.OAuth.Logout(ctx, cfg)
	return err
}

// Close abandons sign-ins still waiting and waits for them to end.
func (l *Logins) Close() {
	l.init()
	l.cancel()
	l.wg.Wait()
}
