module github.com/BurntSushi/xgb

go 1.13
