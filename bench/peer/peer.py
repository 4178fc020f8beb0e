"""The peer of `npm run bench`: the OpenAI Agents SDK on Temporal (`temporalio.openai_agents`), the integration
Temporal ships, driven by the same scripted model over HTTP (Chat Completions) as Deputy.

    python bench/peer/peer.py --address HOST:PORT --base-url URL --mode long --turns 100 --id ID
    python bench/peer/peer.py ... --mode tree --id ID

`long`: one agent calls a tool `turns` times (each result 2,000 bytes), then answers. `tree`: a parent agent with three
agents-as-tools, each calling one tool. Runs one workflow on a worker of its own, prints one JSON line: the workflow
id, its wall time, the worker's peak RSS and its replay time. Its history is read by the bench (same server).
"""

import argparse
import asyncio
import importlib.metadata
import json
import os
import resource
import time
import uuid
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Replayer, Worker

with workflow.unsafe.imports_passed_through():
    from agents import Agent, OpenAIProvider, Runner
    from openai import AsyncOpenAI
    from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
    from temporalio.openai_agents.workflow import activity_as_tool

RESULT_BYTES = 2000


@activity.defn
async def fetch_page(page: int) -> str:
    """A page of 2,000 bytes (the tool result of every turn)."""
    head = f"page {page}: "
    return head + "x" * (RESULT_BYTES - len(head))


def page_tool():
    return activity_as_tool(fetch_page, start_to_close_timeout=timedelta(seconds=30))


@workflow.defn
class PeerLongRun:
    @workflow.run
    async def run(self, task: str, turns: int) -> str:
        agent = Agent(name="reader", instructions="You read pages.", tools=[page_tool()])
        result = await Runner.run(agent, input=task, max_turns=turns + 5)
        return str(result.final_output)


@workflow.defn
class PeerTree:
    @workflow.run
    async def run(self, task: str) -> str:
        parts = [
            Agent(name=f"part_{n}", instructions=f"You do part {n}.", tools=[page_tool()]).as_tool(
                tool_name=f"part_{n}", tool_description=f"Do part {n} of the work."
            )
            for n in (1, 2, 3)
        ]
        parent = Agent(name="parent", instructions="You split the work.", tools=parts)
        result = await Runner.run(parent, input=task, max_turns=10)
        return str(result.final_output)


def plugin(base_url: str) -> OpenAIAgentsPlugin:
    client = AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
    return OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=60)),
        model_provider=OpenAIProvider(openai_client=client, use_responses=False),
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--mode", choices=["long", "tree"], required=True)
    parser.add_argument("--turns", type=int, default=0)
    parser.add_argument("--task", required=True)
    parser.add_argument("--id", default=f"peer-{uuid.uuid4()}")
    args = parser.parse_args()
    agents = plugin(args.base_url)
    client = await Client.connect(args.address, plugins=[agents])
    queue = f"peer-{uuid.uuid4()}"
    workflows = [PeerLongRun, PeerTree]
    async with Worker(client, task_queue=queue, workflows=workflows, activities=[fetch_page]):
        started = time.perf_counter()
        if args.mode == "long":
            handle = await client.start_workflow(
                PeerLongRun.run, args=[args.task, args.turns], id=args.id, task_queue=queue
            )
        else:
            handle = await client.start_workflow(PeerTree.run, args.task, id=args.id, task_queue=queue)
        try:
            output = await handle.result()
        except Exception as err:  # the server ended it (its history past the size limit): say so and stop at once
            cause = err.__cause__ or err
            print(json.dumps({"workflowId": args.id, "ended": f"{type(cause).__name__}: {cause}"}), flush=True)
            os._exit(0)
        wall = time.perf_counter() - started
    history = await handle.fetch_history()
    replayer = Replayer(workflows=workflows, plugins=[agents])
    replay_started = time.perf_counter()
    await replayer.replay_workflow(history)
    replay = time.perf_counter() - replay_started
    # ru_maxrss is in KiB on Linux.
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    versions = {
        name: importlib.metadata.version(name)
        for name in ("temporalio", "temporalio-openai-agents", "openai-agents")
    }
    print(
        json.dumps(
            {
                "workflowId": args.id,
                "output": output,
                "wallMs": wall * 1000,
                "replayMs": replay * 1000,
                "peakRssBytes": rss,
                "versions": versions,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
