//! A task's stored record read and edited by hand, as an operator (or a
//! bug) could: the string of `lua/common/04_records.lua`, a MessagePack
//! array of the fields in the order of its `LETTERS`.

use fred::{clients::Client, interfaces::LuaInterface};

/// Reads or edits the record at KEYS[1]. ARGV[1] `get` then letters:
/// answers their values (nil for absent). ARGV[1] `set` then triples of
/// letter, `1` (set) or `0` (remove), value: writes the record back.
/// `fields` answers every present field as a flat list of letter, value.
const SCRIPT: &str = r"
local LETTERS = {'s', 'n', 'p', 'a', 'm', 'f', 'c', 'd', 'b', 'z', 'x', 'o', 'r', 'e', 'w', 'l', 'q', 'k', 'g', 'v',
  'h', 'u', 'y'}
local POS = {}
for i, l in ipairs(LETTERS) do POS[l] = i end
local rec = cmsgpack.unpack(redis.call('GET', KEYS[1]))
if ARGV[1] == 'get' then
  local out = {}
  for i = 2, #ARGV do out[i - 1] = rec[POS[ARGV[i]]] end
  return out
elseif ARGV[1] == 'fields' then
  local out = {}
  for i, l in ipairs(LETTERS) do
    if rec[i] then out[#out + 1] = l; out[#out + 1] = rec[i] end
  end
  return out
end
for i = 2, #ARGV, 3 do
  rec[POS[ARGV[i]]] = ARGV[i + 1] == '1' and ARGV[i + 2]
end
redis.call('SET', KEYS[1], cmsgpack.pack(rec))
return 1
";

/// The values of `letters` in the record at `key` (None: absent).
pub async fn get(
    client: &Client,
    key: &str,
    letters: &[&str],
) -> Result<Vec<Option<String>>, fred::error::Error> {
    let mut args = vec!["get".to_owned()];
    args.extend(letters.iter().map(|l| (*l).to_owned()));
    let mut values: Vec<Option<String>> = client.eval(SCRIPT, vec![key.to_owned()], args).await?;
    values.resize(letters.len(), None);
    Ok(values)
}

/// One field of the record at `key`.
pub async fn field(client: &Client, key: &str, letter: &str) -> Result<Option<String>, fred::error::Error> {
    Ok(get(client, key, &[letter]).await?.pop().flatten())
}

/// Every present field of the record at `key`, in the record's order.
pub async fn all(client: &Client, key: &str) -> Result<Vec<(String, String)>, fred::error::Error> {
    let flat: Vec<String> = client.eval(SCRIPT, vec![key.to_owned()], vec!["fields".to_owned()]).await?;
    Ok(flat.chunks(2).map(|p| (p[0].clone(), p.get(1).cloned().unwrap_or_default())).collect())
}

/// Sets (Some) or removes (None) fields of the record at `key`.
pub async fn set(
    client: &Client,
    key: &str,
    changes: &[(&str, Option<&str>)],
) -> Result<(), fred::error::Error> {
    let mut args = vec!["set".to_owned()];
    for (letter, value) in changes {
        args.push((*letter).to_owned());
        args.push(if value.is_some() { "1" } else { "0" }.to_owned());
        args.push(value.unwrap_or_default().to_owned());
    }
    let _: i64 = client.eval(SCRIPT, vec![key.to_owned()], args).await?;
    Ok(())
}

/// Sets one field of the record at `key` to any value (bytes that are not
/// UTF-8 included).
pub async fn set_value(
    client: &Client,
    key: &str,
    letter: &str,
    value: fred::types::Value,
) -> Result<(), fred::error::Error> {
    let args = vec![fred::types::Value::from("set"), letter.into(), "1".into(), value];
    let _: i64 = client.eval(SCRIPT, vec![key.to_owned()], args).await?;
    Ok(())
}
