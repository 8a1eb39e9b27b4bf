"""What the tests of the executors that run work elsewhere (processes, Ray) share: the users' data, each user asking in
their own words, settings per run against a stand-in server, and the requests it saw."""

import json

from prefcraft.settings import ModelSettings, Settings

USERS = {"u1": (4, 2), "u2": (2, 2), "u3": (1, 1)}  # (train, val) pairs per user


def write_data(path, user_with):
    users = [user_with(train, val, user_id=user_id) for user_id, (train, val) in USERS.items()]
    rows = [pair.model_dump() for user in users for pair in user.train + user.val + user.test]
    for row in rows:  # each user asks in their own words: no two users' calls are the same request
        row["context"][0]["content"] = f"{row['user_id']} asks: {row['context'][0]['content']}"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def settings_for(server, tmp_path, name):
    return Settings(task=ModelSettings(api_base=server.api_base), serve=False, cache_dir=tmp_path / f"cache-{name}",
                    tracking_uri=f"sqlite:///{tmp_path}/mlflow-{name}.db")


def requests(server):
    return sorted(json.dumps(body, sort_keys=True) for body in server.bodies)
