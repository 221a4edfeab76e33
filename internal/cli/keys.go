package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate"
	"github.com/mcpgate/mcpgate/config"
	"github.com/mcpgate/mcpgate/internal/names"
	"github.com/mcpgate/mcpgate/serve/inbound"
	"github.com/mcpgate/mcpgate/store"
	"github.com/mcpgate/mcpgate/store/postgres"
	"github.com/spf13/cobra"
)

// keysOptions are the flags every `keys` subcommand shares.
type keysOptions struct {
	Deploy string
	Tenant string
}

type keysCreateOptions struct {
	*keysOptions
	Name, User string
	JSON       bool
}

type keysListOptions struct {
	*keysOptions
	JSON bool
}

type keysRevokeOptions struct {
	*keysOptions
	Key  string // an ID, or a whole key
	JSON bool
}

func newKeysCmd(app *App) *cobra.Command {
	opts := &keysOptions{}
	cmd := &cobra.Command{
		Use:   "keys create|list|revoke --tenant TENANT",
		Short: "Manage the API keys callers of serve --http present",
		Long: strings.TrimSpace(`
API keys let agents and programs call a shared gateway (mcpgate serve
--http) as a tenant: they send "Authorization: Bearer mgk_…". The key is
printed once, when it is created; the gateway keeps only its hash, so a
lost key cannot be shown again: revoke it and create another.

The deployment file (--deploy, else $MCPGATE_DEPLOY) names the tenants and
the database the keys are kept in; the gateway's replicas see a new or
revoked key at once.`),
		Example: examples(`
  mcpgate keys create --tenant acme --name ci
  mcpgate keys create --tenant acme --name "alice's laptop" --user alice@acme.example
  mcpgate keys list --tenant acme
  mcpgate keys revoke --tenant acme 3xkq7z2mfu4wv6ab`),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown subcommand %q: use create, list or revoke", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&opts.Deploy, "deploy", "", "deployment `file` (default $"+config.EnvDeploy+")")
	cmd.PersistentFlags().StringVar(&opts.Tenant, "tenant", "", "the `tenant` whose keys these are (required)")
	cmd.AddCommand(newKeysCreateCmd(app, opts), newKeysListCmd(app, opts), newKeysRevokeCmd(app, opts))
	return cmd
}

func newKeysCreateCmd(app *App, shared *keysOptions) *cobra.Command {
	opts := &keysCreateOptions{keysOptions: shared}
	cmd := &cobra.Command{
		Use:   "create --tenant TENANT [--name LABEL] [--user USER]",
		Short: "Create an API key and print it, once",
		Long: strings.TrimSpace(`
Create an API key for the tenant and print it on standard output, alone,
so that KEY=$(mcpgate keys create ...) works. It is never shown again.

With --user, the key acts for that user: it uses the upstream sign-ins of
that user, as a JWT whose user claim says the same would. Without it, the
key is a user of its own.`),
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runKeysCreate(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Name, "name", "", "a `label` saying what the key is for")
	cmd.Flags().StringVar(&opts.User, "user", "", "the `user` the key acts for (default: the key itself)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func newKeysListCmd(app *App, shared *keysOptions) *cobra.Command {
	opts := &keysListOptions{keysOptions: shared}
	cmd := &cobra.Command{
		Use:   "list --tenant TENANT",
		Short: "List a tenant's API keys (never the keys themselves)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runKeysList(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func newKeysRevokeCmd(app *App, shared *keysOptions) *cobra.Command {
	opts := &keysRevokeOptions{keysOptions: shared}
	cmd := &cobra.Command{
		Use:   "revoke --tenant TENANT ID",
		Short: "Revoke an API key: every replica refuses it from now on",
		Long: strings.TrimSpace(`
Revoke the tenant's API key ID (as keys list shows it). The whole key is
accepted too, for a key that leaked: only its ID is read.`),
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Key = args[0]
			return runKeysRevoke(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

// keyJSON is one key as `keys list --json` and `keys create --json` print
// it; Key only once, from create. The hash is never printed.
type keyJSON struct {
	ID       string     `json:"id"`
	Tenant   string     `json:"tenant"`
	Name     string     `json:"name"`
	User     string     `json:"user,omitempty"`
	Created  time.Time  `json:"created"`
	LastUsed *time.Time `json:"lastUsed"`
	Revoked  *time.Time `json:"revoked"`
	Key      string     `json:"key,omitempty"`
}

func toKeyJSON(k *store.APIKey) keyJSON {
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	return keyJSON{ID: k.ID, Tenant: k.Tenant, Name: k.Name, User: k.User, Created: k.CreatedAt,
		LastUsed: opt(k.LastUsedAt), Revoked: opt(k.RevokedAt)}
}

// loadDeployment reads the deployment file: flag (--deploy), else
// $MCPGATE_DEPLOY.
func loadDeployment(app *App, flag string) (*config.Deployment, error) {
	path := flag
	if path == "" {
		path = app.Getenv(config.EnvDeploy)
	}
	if path == "" {
		return nil, usageErrorf("no deployment file: pass --deploy FILE or set %s", config.EnvDeploy)
	}
	return config.LoadDeployment(path, &config.DeployOptions{Getenv: app.Getenv})
}

// openKeys loads the deployment, checks the tenant is one of it, and opens
// its database's API keys (closed with the App). No sealing key is
// needed: keys are stored as hashes.
func openKeys(ctx context.Context, app *App, opts *keysOptions) (*postgres.Keys, error) {
	if opts.Tenant == "" {
		return nil, usageErrorf("--tenant is required: the tenant whose keys these are")
	}
	d, err := loadDeployment(app, opts.Deploy)
	if err != nil {
		return nil, err
	}
	if !d.HasTenant(opts.Tenant) {
		msg := fmt.Sprintf("tenant %q is not in the deployment %s", opts.Tenant, d.Path)
		if c := names.Closest(opts.Tenant, d.TenantIDs(), 3); len(c) > 0 {
			msg += "; did you mean " + strings.Join(c, ", ") + "?"
		}
		return nil, &mcpgate.Error{Category: mcpgate.CategoryNotFound, Message: msg}
	}
	keys, err := postgres.OpenKeys(ctx, d.Database, &postgres.Options{MaxConns: 2})
	if err != nil {
		return nil, err // never holds the connection string's password
	}
	app.onClose(func() { keys.Close() })
	return keys, nil
}

func runKeysCreate(ctx context.Context, app *App, opts *keysCreateOptions) error {
	if opts.Tenant == "" {
		return usageErrorf("--tenant is required: the tenant whose keys these are")
	}
	key, rec, err := inbound.NewKey(opts.Tenant, opts.User, opts.Name)
	if err != nil {
		return &UsageError{Err: err}
	}
	keys, err := openKeys(ctx, app, opts.keysOptions)
	if err != nil {
		return err
	}
	if err := keys.CreateAPIKey(ctx, rec); err != nil {
		return err
	}
	if opts.JSON {
		j := toKeyJSON(rec)
		j.Key = key
		return writeJSON(app.IO.Out, j)
	}
	fmt.Fprintln(app.IO.Out, key)
	label := ""
	if rec.Name != "" {
		label = fmt.Sprintf(" (%s)", sanitize(rec.Name))
	}
	fmt.Fprintf(app.IO.ErrOut, "Created API key %s%s for tenant %s. This is the only time it is shown: mcpgate keeps only its hash.\n"+
		"Callers send it as: Authorization: Bearer mgk_…\n", rec.ID, label, rec.Tenant)
	return nil
}

func runKeysList(ctx context.Context, app *App, opts *keysListOptions) error {
	keys, err := openKeys(ctx, app, opts.keysOptions)
	if err != nil {
		return err
	}
	list, err := keys.APIKeys(ctx, opts.Tenant)
	if err != nil {
		return err
	}
	if opts.JSON {
		out := make([]keyJSON, len(list))
		for i, k := range list {
			out[i] = toKeyJSON(k)
		}
		return writeJSON(app.IO.Out, map[string]any{"keys": out})
	}
	if len(list) == 0 {
		fmt.Fprintf(app.IO.ErrOut, "Tenant %s has no API keys. Create one with: mcpgate keys create --tenant %s --name LABEL\n", opts.Tenant, opts.Tenant)
		return nil
	}
	when := func(t time.Time, zero string) string {
		if t.IsZero() {
			return zero
		}
		return t.Local().Format("2006-01-02 15:04")
	}
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return sanitize(s)
	}
	tw := newTable(app.IO.Out)
	fmt.Fprintln(tw, "ID\tNAME\tUSER\tCREATED\tLAST USED\tREVOKED")
	for _, k := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, dash(k.Name), dash(k.User),
			when(k.CreatedAt, "-"), when(k.LastUsedAt, "never"), when(k.RevokedAt, "-"))
	}
	return tw.Flush()
}

func runKeysRevoke(ctx context.Context, app *App, opts *keysRevokeOptions) error {
	id := opts.Key
	if strings.HasPrefix(id, inbound.KeyPrefix) {
		var err error
		if id, err = inbound.KeyID(id); err != nil {
			return usageErrorf("ID: %v (give the ID keys list shows, or the whole key)", err)
		}
	}
	if !inbound.ValidKeyID(id) {
		return usageErrorf("ID %q: not an API key ID (keys list shows them)", sanitize(id))
	}
	keys, err := openKeys(ctx, app, opts.keysOptions)
	if err != nil {
		return err
	}
	notFound := &mcpgate.Error{Category: mcpgate.CategoryNotFound,
		Message: fmt.Sprintf("tenant %s has no API key %s (keys list --tenant %s shows its keys)", opts.Tenant, id, opts.Tenant)}
	before, err := keys.APIKey(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && before.Tenant != opts.Tenant {
		return notFound
	}
	if err != nil {
		return err
	}
	if err := keys.RevokeAPIKey(ctx, opts.Tenant, id, time.Now()); errors.Is(err, store.ErrNotFound) {
		return notFound
	} else if err != nil {
		return err
	}
	after, err := keys.APIKey(ctx, id)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(app.IO.Out, map[string]any{"key": toKeyJSON(after), "alreadyRevoked": before.Revoked()})
	}
	if before.Revoked() {
		fmt.Fprintf(app.IO.Out, "API key %s of tenant %s was already revoked on %s.\n", id, opts.Tenant, after.RevokedAt.Local().Format("2006-01-02 15:04"))
		return nil
	}
	fmt.Fprintf(app.IO.Out, "Revoked API key %s of tenant %s: every replica refuses it from now on.\n", id, opts.Tenant)
	return nil
}
