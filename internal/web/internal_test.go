package web

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/manager"
)

func TestChooseIssuerOffersTheIssuers(t *testing.T) {
	t.Parallel()
	err := &mcpgate.Error{Category: mcpgate.CategoryAuth, Code: "choose_issuer",
		Message: "the server accepts several authorization servers; choose one with --issuer: https://a.example, https://b.example/t, javascript:alert(1)"}
	l := loginOutcome(nil, err)
	if l.state != "failed" || !slices.Equal(l.issuers, []string{"https://a.example", "https://b.example/t"}) {
		t.Errorf("got %+v", l)
	}
	if l := loginOutcome(nil, errors.New("boom")); l.issuers != nil || l.message != "boom" {
		t.Errorf("got %+v", l)
	}
}

// TestPageAddressExpires: an address nobody opened stops working after
// launchTTL, as a sign-in ticket does after ticketTTL.
func TestPageAddressExpires(t *testing.T) {
	m, err := manager.New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := New(&Options{Manager: m, Config: func() (*config.File, error) { return nil, nil }, Addr: "127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	timeNow = func() time.Time { return now }
	defer func() { timeNow = time.Now }()
	fresh, stale := s.URL(), s.URL()
	token := func(u string) string { return u[strings.Index(u, "token=")+len("token="):] }
	now = now.Add(launchTTL - time.Second)
	if !s.redeem(token(fresh)) {
		t.Error("an address within its time was refused")
	}
	now = now.Add(2 * time.Second)
	if s.redeem(token(stale)) {
		t.Error("an address past launchTTL opened the page")
	}
	s.tickets["t"] = loginTicket{server: "x", expiry: now.Add(ticketTTL)}
	now = now.Add(ticketTTL + time.Second)
	if _, ok := s.takeTicket("t"); ok {
		t.Error("a ticket past ticketTTL was taken")
	}
}
