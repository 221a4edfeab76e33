-- Each server's last valid catalog (store.CatalogStore): remote content,
-- never secret, so unsealed. Each list is JSON as the server sent it,
-- NULL for a kind never loaded; bytea keeps it byte for byte.
CREATE TABLE catalogs (
	tenant     text NOT NULL,
	server     text NOT NULL,
	url        text NOT NULL,
	protocol   text NOT NULL,
	tools      bytea,
	prompts    bytea,
	resources  bytea,
	templates  bytea,
	counts     text NOT NULL, -- JSON [tools, prompts, resources, templates]
	fetched_at timestamptz,
	ttl        bigint NOT NULL, -- nanoseconds
	generation bigint NOT NULL,
	PRIMARY KEY (tenant, server)
);
