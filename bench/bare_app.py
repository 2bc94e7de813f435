"""The practical ceiling: a bare Starlette app that answers a fixed JSON body for every path.

Served like the mock (uvicorn, httptools, uvloop, no access log):
    python bench/bare_app.py --port 8081
"""
import argparse

import uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

BODY = b'{"id":"a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5","state":"DEPLOYED"}'


async def answer(request):
    await request.body()
    return Response(BODY, media_type="application/json")


app = Starlette(routes=[Route("/{path:path}", answer, methods=["GET", "POST", "PUT", "PATCH", "DELETE"])])

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False,
                lifespan="on", http="httptools", loop="uvloop")
