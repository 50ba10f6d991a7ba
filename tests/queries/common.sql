-- The records of every recording in a directory, as DuckDB reads them (one row per line; the
-- half line a crash left at the end of a recording is skipped: ignore_errors).
CREATE OR REPLACE VIEW records AS
SELECT * FROM read_json(getvariable('recordings'), format = 'newline_delimited', ignore_errors = true,
  filename = true,
  columns = {kind: 'VARCHAR', seq: 'BIGINT', t: 'VARCHAR', "from": 'VARCHAR', msg: 'JSON',
             text: 'VARCHAR', base64: 'VARCHAR', violations: 'JSON', argv: 'JSON',
             rule: 'VARCHAR', level: 'VARCHAR', message: 'VARCHAR', exit: 'BIGINT', reason: 'VARCHAR'});
-- Each recording's agent: name and version from its initialize result.
CREATE OR REPLACE VIEW agents AS
SELECT filename, any_value(coalesce(msg->'result'->'agentInfo', msg->'result'->'info')->>'name' || ' '
       || coalesce(coalesce(msg->'result'->'agentInfo', msg->'result'->'info')->>'version', '')) AS agent
FROM records WHERE kind = 'frame' AND (msg->'result'->>'protocolVersion') IS NOT NULL GROUP BY filename;
