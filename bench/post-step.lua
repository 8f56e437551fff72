-- F4's one-step results posts, made by wrk: each POST carries one step with a key of its own (the
-- run takes a key once; a repeated key would be a retry, answered without storing anything).
-- The URL, the key and the content type come from the command line (bench/figures.ts).
local count = 0

request = function()
  count = count + 1
  local body = '{"steps":[{"key":"p' .. count .. '","title":"Step","status":"passed","durationMs":5}]}'
  return wrk.format("POST", nil, nil, body)
end
