WITH prompts AS (
  SELECT filename, seq, t::TIMESTAMPTZ AS began FROM records
  WHERE kind = 'frame' AND msg->>'method' = 'session/prompt' AND (msg->'id') IS NOT NULL
), ends AS (
  SELECT filename, seq, t::TIMESTAMPTZ AS ended FROM records
  WHERE kind = 'frame'
    AND (coalesce(msg->'result'->>'stopReason', msg->'params'->'update'->>'stopReason')) IS NOT NULL
), turns AS (
  SELECT p.filename, p.began, min(e.ended) AS ended
  FROM prompts p JOIN ends e ON e.filename = p.filename AND e.seq > p.seq
  GROUP BY p.filename, p.seq, p.began
)
SELECT agent, date_trunc('day', began) AS day, count(*) AS turns,
       quantile_cont(epoch(ended - began), 0.95) AS p95_seconds
FROM turns JOIN agents USING (filename) GROUP BY agent, day ORDER BY agent, day;
