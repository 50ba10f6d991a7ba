WITH findings AS (
  SELECT filename, unnest(from_json(violations, '[{"rule": "VARCHAR", "level": "VARCHAR"}]')) AS f
  FROM records WHERE violations IS NOT NULL
  UNION ALL
  SELECT filename, {'rule': rule, 'level': level} FROM records WHERE kind = 'violation'
)
SELECT agent, count(*) AS errors FROM findings JOIN agents USING (filename)
WHERE f.level = 'error' GROUP BY agent ORDER BY agent;
