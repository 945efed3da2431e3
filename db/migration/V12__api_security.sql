-- API accounts and bearer tokens (module api, issue 8).
--
-- api_account: who may call the API. Role viewer (reads) < operator (also submits, cancels, releases) <
-- admin (every experiment, account and token management). experiments: the experiments whose requests
-- the account sees and may act on; '*' means all. Accounts come from stagehand.security.accounts (written
-- here at every start) and from the admin API; the grid-mapfile maps certificate DNs to these names.
CREATE TABLE api_account (
    name        text        PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9._@+=-]{1,128}$'),
    role        text        NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    experiments text[]      NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- api_token: bearer tokens for scripts. Only a SHA-256 of each token is stored (tokens are 256-bit
-- random values, so a plain hash cannot be reversed by guessing); the token itself is shown once, when made.
CREATE TABLE api_token (
    id           uuid        PRIMARY KEY,
    account      text        NOT NULL REFERENCES api_account (name) ON DELETE CASCADE,
    label        text,
    token_sha256 char(64)    NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    created_by   text        NOT NULL,
    expires_at   timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_token_account_idx ON api_token (account);
