-- The first schema: credentials, registrations, login flows, pending
-- interactions and the request log. Times are timestamptz (microseconds),
-- lists JSON, sealed values base64 text.
CREATE TABLE credentials (
	tenant         text NOT NULL,
	server         text NOT NULL,
	resource       text NOT NULL,
	issuer         text NOT NULL,
	client_id      text NOT NULL,
	redirect_uri   text NOT NULL,
	kind           text NOT NULL,
	access_token   text NOT NULL, -- sealed
	token_type     text NOT NULL,
	refresh_token  text NOT NULL, -- sealed
	expiry         timestamptz,
	scopes         jsonb NOT NULL,
	step_up_scopes jsonb NOT NULL,
	step_up_count  integer NOT NULL,
	updated_at     timestamptz,
	dpop_key       text NOT NULL, -- sealed
	PRIMARY KEY (tenant, server)
);

CREATE TABLE registrations (
	tenant                     text NOT NULL,
	issuer                     text NOT NULL,
	redirect_uri               text NOT NULL,
	client_id                  text NOT NULL,
	client_secret              text NOT NULL, -- sealed
	client_secret_expires_at   timestamptz,
	token_endpoint_auth_method text NOT NULL,
	created_at                 timestamptz,
	PRIMARY KEY (tenant, issuer, redirect_uri)
);

CREATE TABLE flows (
	state        text PRIMARY KEY, -- SHA-256 of the state, never the state
	tenant       text NOT NULL,
	server       text NOT NULL,
	verifier     text NOT NULL, -- sealed
	issuer       text NOT NULL,
	client_id    text NOT NULL,
	redirect_uri text NOT NULL,
	resource     text NOT NULL,
	scopes       jsonb NOT NULL,
	expiry       timestamptz NOT NULL
);
CREATE INDEX flows_expiry ON flows (expiry);

CREATE TABLE interactions (
	tenant     text NOT NULL,
	id         text NOT NULL,
	server     text NOT NULL,
	kind       text NOT NULL,
	message    text NOT NULL,
	payload    bytea,
	created_at timestamptz,
	expiry     timestamptz NOT NULL,
	PRIMARY KEY (tenant, id)
);
CREATE INDEX interactions_expiry ON interactions (expiry);

CREATE TABLE request_log (
	id          bigserial PRIMARY KEY, -- grows with each append; orders entries
	tenant      text NOT NULL,
	time        timestamptz NOT NULL,
	server      text NOT NULL,
	method      text NOT NULL,
	tool        text NOT NULL,
	duration    bigint NOT NULL, -- nanoseconds
	outcome     text NOT NULL,
	http_status integer NOT NULL,
	bytes_in    bigint NOT NULL,
	bytes_out   bigint NOT NULL
);
CREATE INDEX request_log_tenant ON request_log (tenant, id);
