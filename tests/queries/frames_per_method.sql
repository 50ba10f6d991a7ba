SELECT msg->>'method' AS method, count(*) AS frames
FROM records WHERE kind = 'frame' AND (msg->>'method') IS NOT NULL
GROUP BY method ORDER BY frames DESC, method;
