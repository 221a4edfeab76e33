-- What the server said of itself when the catalog was listed
-- (store.Catalog.Title and Instructions); '' in rows written before.
ALTER TABLE catalogs ADD COLUMN title text NOT NULL DEFAULT '';
ALTER TABLE catalogs ADD COLUMN instructions text NOT NULL DEFAULT '';
