# Records tests/data/import/torch_cpu_step.json: a PyTorch profiler (Kineto)
# Chrome trace of two training steps of a small MLP on the CPU, with
# record_shapes=True. Run with torch from PyPI:
#   python3 -m venv /tmp/venv && /tmp/venv/bin/pip install torch
#   /tmp/venv/bin/python tests/data/import/make_torch_trace.py tests/data/import/torch_cpu_step.json
import sys
import torch
from torch.profiler import profile, schedule, ProfilerActivity

torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256),
    torch.nn.LayerNorm(256), torch.nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 256)
y = torch.randint(0, 10, (64,))

def step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()

with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
             schedule=schedule(wait=1, warmup=1, active=2, repeat=1)) as prof:
    for _ in range(4):
        step()
        prof.step()
prof.export_chrome_trace(sys.argv[1])
