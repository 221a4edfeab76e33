-- When the last sign-in for a step-up was made; NULL for none (and for
-- credentials written before the column existed).
ALTER TABLE credentials ADD COLUMN step_up_at timestamptz;
