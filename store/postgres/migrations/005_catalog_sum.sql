-- The content sum of each catalog (store.Catalog.Sum), NULL in rows
-- written before it.
ALTER TABLE catalogs ADD COLUMN sum bytea;
