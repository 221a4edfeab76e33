-- Inbound API keys of `mcpgate serve --http` (`mcpgate keys`). The key's
-- secret is never stored: hash is its SHA-256, bound to the ID.
CREATE TABLE api_keys (
	id           text PRIMARY KEY, -- public, part of the key
	tenant       text NOT NULL,
	subject      text NOT NULL, -- the user the key acts for; '' for the key itself
	name         text NOT NULL,
	hash         bytea NOT NULL,
	created_at   timestamptz NOT NULL,
	last_used_at timestamptz,
	revoked_at   timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant, created_at);
