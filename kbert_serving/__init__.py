"""kbert_serving: a kbert model behind an HTTP server, with dynamic batching, TF Serving's and OpenAI's request
shapes, a page to try it, and Prometheus metrics (apps/serve.py is the command).

`load_served_model(source)` loads what the server answers with: a Keras task model (kbert is imported then), or an
export's TFLite model on LiteRT through `kbert_edge`, with no Keras and no TensorFlow in the process. It is a
package beside `kbert/` for that reason, as `kbert_edge` is: importing anything inside `kbert` imports Keras.
`make_app` is the server's ASGI application and `serve` runs it under uvicorn.
"""

from kbert_serving.batcher import BatchSettings, DynamicBatcher, QueueFull
from kbert_serving.served_model import KINDS, InputLimits, ModelThread, RequestError, ServedModel, load_served_model
from kbert_serving.server import ServerSettings, make_app, serve
