package web

import (
	"errors"
	"slices"
	"testing"

	"github.com/mcpgate/mcpgate"
)

func TestChooseIssuerOffersTheIssuers(t *testing.T) {
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
